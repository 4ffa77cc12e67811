import { Type } from '@sinclair/typebox';
import { StatusBody } from '@sluice/shared/schemas';
import { SLUICE_VERSION } from '@sluice/shared/util';
import { pingDatabase } from './health.repository.js';
import type { GatewayContext } from '../../context.js';
import { ok, route, type AnyRoute, type Reply } from '../../http/route.js';
import { clusterProbe } from './health.cluster-probe.js';

const tag = 'health';
const Unavailable = { description: 'A dependency is down', schema: StatusBody };
const DeploymentInfo = Type.Object(
  {
    mode: Type.Union([Type.Literal('SELF_HOSTED'), Type.Literal('CLOUD')]),
    version: Type.String(),
    registration_allowed: Type.Boolean(),
    verification_required: Type.Boolean(),
    api_key_login: Type.Boolean(),
    cluster_adapter: Type.Union([Type.Literal('embedded'), Type.Literal('kubernetes')]),
    database: Type.Union([Type.Literal('postgres'), Type.Literal('pglite')]),
  },
  { $id: 'DeploymentInfo', additionalProperties: false },
);
const DebugInfo = Type.Object({ header: Type.Record(Type.String(), Type.String()) }, { $id: 'DebugInfo' });
/** Credentials never echo back, not even to their owner. */
const HIDDEN_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization', 'sec-websocket-protocol']);

export function healthRoutes(ctx: GatewayContext): AnyRoute[] {
  const cluster = clusterProbe(ctx.config.clusterAdapter, ctx.db);
  const dbStatus = async (): Promise<Reply> => {
    try {
      await pingDatabase(ctx.db);
      return ok({ status: 'ok', database: ctx.dbKind });
    } catch (err) {
      ctx.log.warn({ err: (err as Error).message }, 'Database check failed');
      return { status: 503, body: { status: 'unavailable', database: ctx.dbKind } };
    }
  };
  const probe = (path: string, summary: string, run: () => Promise<Reply>) =>
    route({
      method: 'get',
      path,
      tag,
      auth: 'public',
      summary,
      responses: { 200: { description: 'Healthy', schema: StatusBody }, 503: Unavailable },
      handler: run,
    });
  return [
    probe('/healthchecks', 'The service answers', async () => ok({ status: 'ok', version: SLUICE_VERSION })),
    probe('/healthchecks/db', 'The database answers a query', dbStatus),
    probe('/healthchecks/k8s', 'The cluster API in use answers', async () => {
      try {
        await cluster.check();
        return ok({ status: 'ok', adapter: cluster.adapter, reachable: true });
      } catch (err) {
        ctx.log.warn({ err: (err as Error).message, adapter: cluster.adapter }, 'Cluster check failed');
        return { status: 503, body: { status: 'unavailable', adapter: cluster.adapter, reachable: false } };
      }
    }),
    route({
      method: 'get',
      path: '/healthchecks/debug',
      tag,
      auth: 'public',
      summary: 'The request headers as the service received them (credentials hidden)',
      responses: { 200: { description: 'Headers', schema: DebugInfo } },
      handler: async ({ req }) => {
        const header: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) {
          if (v !== undefined && !HIDDEN_HEADERS.has(k)) header[k] = Array.isArray(v) ? v.join(', ') : v;
        }
        return ok({ header });
      },
    }),
    probe('/livez', 'Liveness: the process serves requests', async () => ok({ status: 'ok' })),
    probe('/readyz', 'Readiness: the database answers', dbStatus),
    route({
      method: 'get',
      path: '/config/deployment',
      tag: 'config',
      auth: 'user',
      summary: 'How this deployment is set up',
      responses: { 200: { description: 'Deployment information', schema: DeploymentInfo } },
      handler: async () =>
        ok({
          mode: ctx.config.deploymentMode,
          version: SLUICE_VERSION,
          registration_allowed: ctx.config.allowRegistration,
          verification_required: ctx.config.requireVerified,
          api_key_login: ctx.config.deploymentMode === 'SELF_HOSTED',
          cluster_adapter: ctx.config.clusterAdapter,
          database: ctx.dbKind,
        }),
    }),
  ];
}
