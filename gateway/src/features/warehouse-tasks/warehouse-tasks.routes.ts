import {
  PageQuery,
  TaskCreate,
  TaskPage,
  TaskParams,
  TaskRead,
  TaskRunPage,
  TaskRunRead,
  TaskUpdate,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as tasks from './warehouse-tasks.service.js';
import { forbidden403, tag } from '../warehouses/warehouses.routes.js';

const notFound404 = { description: 'No such warehouse or task' };
const invalid422 = { description: 'Invalid schedule or time zone (every issue, located)' };

export function taskRoutes(ctx: GatewayContext): AnyRoute[] {
  const pause = (call: 'pause' | 'resume') =>
    route({
      method: 'post',
      path: `/warehouses/:id/tasks/:task_id/${call}`,
      tag,
      auth: 'user',
      summary:
        call === 'pause'
          ? 'Stop running the task on its schedule'
          : 'Run the task on its schedule again (from the next slot)',
      params: TaskParams,
      responses: { 200: { description: 'The task', schema: TaskRead }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params }) =>
        ok(await tasks.setPaused(ctx, principal, params.id, params.task_id, call === 'pause')),
    });
  return [
    route({
      method: 'get',
      path: '/warehouses/:id/tasks/',
      tag,
      auth: 'user',
      summary: 'List the tasks of a warehouse with their schedule, next run and last runs',
      params: IdParams,
      query: PageQuery,
      responses: {
        200: { description: 'A page of tasks', schema: TaskPage },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params, query }) =>
        ok(await tasks.listTasks(ctx, principal, params.id, query)),
    }),
    route({
      method: 'post',
      path: '/warehouses/:id/tasks/',
      tag,
      auth: 'user',
      summary: 'Create a task: a named SQL statement run on a cron schedule in a time zone',
      params: IdParams,
      body: TaskCreate,
      responses: {
        201: { description: 'Created', schema: TaskRead },
        403: forbidden403,
        404: notFound404,
        409: { description: 'A task with this name exists on the warehouse' },
        422: invalid422,
      },
      handler: async ({ principal, params, body }) =>
        created(await tasks.createTask(ctx, principal, params.id, body)),
    }),
    route({
      method: 'get',
      path: '/warehouses/:id/tasks/:task_id',
      tag,
      auth: 'user',
      summary: 'Read a task with its next run and last runs',
      params: TaskParams,
      responses: { 200: { description: 'The task', schema: TaskRead }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params }) =>
        ok(await tasks.getTask(ctx, principal, params.id, params.task_id)),
    }),
    route({
      method: 'patch',
      path: '/warehouses/:id/tasks/:task_id',
      tag,
      auth: 'user',
      summary: 'Change a task (a new schedule or time zone counts from now)',
      params: TaskParams,
      body: TaskUpdate,
      responses: {
        200: { description: 'The task', schema: TaskRead },
        403: forbidden403,
        404: notFound404,
        409: { description: 'A task with this name exists on the warehouse' },
        422: invalid422,
      },
      handler: async ({ principal, params, body }) =>
        ok(await tasks.updateTask(ctx, principal, params.id, params.task_id, body)),
    }),
    route({
      method: 'delete',
      path: '/warehouses/:id/tasks/:task_id',
      tag,
      auth: 'user',
      summary: 'Delete a task with its runs',
      params: TaskParams,
      responses: { 204: { description: 'Deleted' }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params }) => {
        await tasks.deleteTask(ctx, principal, params.id, params.task_id);
        return noContent();
      },
    }),
    pause('pause'),
    pause('resume'),
    route({
      method: 'post',
      path: '/warehouses/:id/tasks/:task_id/run',
      tag,
      auth: 'user',
      summary: 'Run the task now and return the run (its schedule is untouched)',
      params: TaskParams,
      responses: {
        200: { description: 'The finished run', schema: TaskRunRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) =>
        ok(await tasks.runTaskNow(ctx, principal, params.id, params.task_id)),
    }),
    route({
      method: 'get',
      path: '/warehouses/:id/tasks/:task_id/runs',
      tag,
      auth: 'user',
      summary: 'The runs of a task, newest first (the newest 100 are kept)',
      params: TaskParams,
      query: PageQuery,
      responses: {
        200: { description: 'A page of runs', schema: TaskRunPage },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params, query }) =>
        ok(await tasks.listRuns(ctx, principal, params.id, params.task_id, query)),
    }),
  ];
}
