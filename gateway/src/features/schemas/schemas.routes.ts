import { Type } from '@sinclair/typebox';
import {
  PageQuery,
  SchemaCreate,
  SchemaRead,
  SchemaSubject,
  SchemaSubjectPage,
  SchemaVersionList,
  SchemaVersionRead,
  SchemaVersionRef,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { created, ok, route, type AnyRoute } from '../../http/route.js';
import * as schemas from './schemas.service.js';

const tag = 'schemas';
const SubjectParams = Type.Object({ subject: SchemaSubject });
const VersionParams = Type.Object({ subject: SchemaSubject, version: SchemaVersionRef });
const subjectNotFound = { description: 'No such subject' };

/**
 * Spec 2.11 and 4.7: the schema registry. Subjects are global, like a
 * Confluent registry: any authenticated user may register and read them.
 */
export function schemaRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/schemas/',
      tag,
      auth: 'user',
      summary: 'Subjects in byte order, each with its latest version',
      query: PageQuery,
      responses: { 200: { description: 'A page of subjects', schema: SchemaSubjectPage } },
      handler: async ({ query }) => ok(await schemas.listSubjects(ctx, query)),
    }),
    route({
      method: 'post',
      path: '/schemas/:subject',
      tag,
      auth: 'user',
      summary: 'Register an Avro or JSON Schema definition under a subject',
      description:
        'The definition is parsed and validated (a bad one is a 422 at `body.schema`). ' +
        'The same definition again (compared in canonical form: parsed, keys sorted, no whitespace) ' +
        'answers 200 with its existing id and version; a changed one becomes the next version (201).',
      params: SubjectParams,
      body: SchemaCreate,
      responses: {
        200: { description: 'Already registered: the existing version', schema: SchemaRead },
        201: { description: 'Registered as a new version', schema: SchemaRead },
      },
      handler: async ({ params, body }) => {
        const r = await schemas.registerSchema(ctx, params.subject, body);
        return r.created ? created(r.schema) : ok(r.schema);
      },
    }),
    route({
      method: 'get',
      path: '/schemas/:subject/versions',
      tag,
      auth: 'user',
      summary: 'Every version of a subject, oldest first',
      params: SubjectParams,
      responses: {
        200: { description: 'The versions', schema: SchemaVersionList },
        404: subjectNotFound,
      },
      handler: async ({ params }) => ok(await schemas.listVersions(ctx, params.subject)),
    }),
    route({
      method: 'get',
      path: '/schemas/:subject/versions/:version',
      tag,
      auth: 'user',
      summary: 'One version of a subject, with its definition (`latest` for the newest)',
      params: VersionParams,
      responses: {
        200: { description: 'The version', schema: SchemaVersionRead },
        404: { description: 'No such subject or version' },
      },
      handler: async ({ params }) => ok(await schemas.getVersion(ctx, params.subject, params.version)),
    }),
  ];
}
