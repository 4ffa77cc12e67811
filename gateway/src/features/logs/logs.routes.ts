import { Type } from '@sinclair/typebox';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { ok, route, type AnyRoute } from '../../http/route.js';
import { DEFAULT_TAIL, MAX_TAIL, tailOf } from './logs.service.js';

const LogTailQuery = Type.Object({
  tail: Type.Integer({
    minimum: 1,
    maximum: MAX_TAIL,
    default: DEFAULT_TAIL,
    description: `How many of the last lines (default ${DEFAULT_TAIL}, at most ${MAX_TAIL})`,
  }),
});

const LogLines = Type.Object(
  {
    lines: Type.Array(Type.String(), {
      description:
        "The worker's log lines, oldest first, as the worker wrote them (structured JSON, one object a line; free of secrets and message contents). Empty when no worker runs.",
    }),
  },
  { additionalProperties: false },
);

export function logRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/connectors/:id/logs',
      tag: 'connectors',
      auth: 'user',
      summary: "The last lines of the connector's worker log",
      description:
        'For diagnosing a connector (for example one stuck in `building`). To follow the log live, open the WebSocket of the same path (docs/api.md, "Log streams"). On Kubernetes the lines are the worker container\'s log of its current pod, as the kubelet keeps it (read through the API server); a target of several replicas gives the last lines of all its pods together, by time, each naming its pod in `instance`.',
      params: IdParams,
      query: LogTailQuery,
      responses: {
        200: { description: 'The last lines', schema: LogLines },
        403: { description: 'Not a member of the owning team' },
        404: { description: 'No such connector' },
      },
      handler: async ({ principal, params, query }) =>
        ok({ lines: await tailOf(ctx, principal, params.id, query.tail) }),
    }),
  ];
}
