import { randomUUID } from 'node:crypto';
import cors from 'cors';
import express, { type Express, type Router } from 'express';
import helmet from 'helmet';
import { pinoHttp } from 'pino-http';
import swaggerUi from 'swagger-ui-dist';
import { createAuthenticator } from './auth/authenticate.js';
import type { GatewayContext } from './context.js';
import { apiKeyRoutes } from './features/api-keys/api-keys.routes.js';
import { authRoutes } from './features/auth/auth.routes.js';
import { backfillRoutes } from './features/backfills/backfills.routes.js';
import { connectorRoutes } from './features/connectors/connectors.routes.js';
import { datamodelRoutes } from './features/datamodels/datamodels.routes.js';
import { deletionRoutes } from './features/deletions/deletions.routes.js';
import { subscriptionRoutes } from './features/subscriptions/subscriptions.routes.js';
import { pipelineRoutes } from './features/pipelines/pipelines.routes.js';
import { preflightRoutes } from './features/preflight/preflight.routes.js';
import { previewRoutes } from './features/preview/preview.routes.js';
import { connectorTypeRoutes } from './features/connector-types/connector-types.routes.js';
import { envRoutes } from './features/envs/envs.routes.js';
import { logRoutes } from './features/logs/logs.routes.js';
import { logSockets } from './features/logs/logs.socket.js';
import { healthRoutes } from './features/health/health.routes.js';
import { schemaRoutes } from './features/schemas/schemas.routes.js';
import { secretRoutes } from './features/secrets/secrets.routes.js';
import { smtRoutes } from './features/smt/smt.routes.js';
import { teamRoutes } from './features/teams/teams.routes.js';
import { userRoutes } from './features/users/users.routes.js';
import { taskRoutes } from './features/warehouse-tasks/warehouse-tasks.routes.js';
import { warehouseRoutes } from './features/warehouses/warehouses.routes.js';
import { errorHandler, notFound } from './http/errors.js';
import { methodNotAllowed } from './http/method-not-allowed.js';
import { mountRoutes } from './http/mount.js';
import { acceptReadOnlyFields } from './http/read-only.js';
import { buildOpenApi } from './http/openapi.js';
import type { AnyRoute } from './http/route.js';

/** Every API route of this build, in matching order. */
export function allRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    ...healthRoutes(ctx),
    ...authRoutes(ctx),
    ...apiKeyRoutes(ctx),
    ...userRoutes(ctx),
    ...envRoutes(ctx),
    ...teamRoutes(ctx),
    ...smtRoutes(),
    ...connectorTypeRoutes(),
    ...preflightRoutes(ctx),
    ...connectorRoutes(ctx),
    ...logRoutes(ctx),
    ...datamodelRoutes(ctx),
    ...subscriptionRoutes(ctx),
    ...pipelineRoutes(ctx),
    ...previewRoutes(ctx),
    ...schemaRoutes(ctx),
    ...secretRoutes(ctx),
    ...warehouseRoutes(ctx),
    ...taskRoutes(ctx),
    ...backfillRoutes(ctx),
    ...deletionRoutes(ctx),
  ].map(acceptReadOnlyFields);
}

/** Paths under /api that serve documentation rather than operations. */
export const DOCUMENTATION_PATHS = ['/openapi.json', '/docs', '/docs/init.js', '/docs/assets'];
/** The documentation paths that are single GET routes (the assets are a static folder). */
const DOCUMENTED_GETS = ['/openapi.json', '/docs', '/docs/init.js'];

function mountDocs(api: Router, openapi: unknown): void {
  api.get('/openapi.json', (_req, res) => void res.json(openapi));
  api.use('/docs/assets', express.static(swaggerUi.getAbsoluteFSPath(), { index: false, maxAge: '1h' }));
  api.get('/docs/init.js', (_req, res) => {
    res
      .type('application/javascript')
      .send("window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#ui', deepLinking: true });\n");
  });
  api.get('/docs', (_req, res) => {
    res.type('html').send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sluice API</title>
<link rel="stylesheet" href="/api/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/api/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script></body></html>`);
  });
}

export function buildApp(ctx: GatewayContext): {
  app: Express;
  routes: AnyRoute[];
  openapi: Record<string, unknown>;
} {
  const routes = allRoutes(ctx);
  const openapi = buildOpenApi(routes);
  const app = express();
  app.disable('x-powered-by');
  // Never `true` (config.ts refuses it): the client could then write its own address.
  app.set('trust proxy', ctx.config.trustProxy);
  app.use(
    pinoHttp({
      logger: ctx.log,
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      // Only the method and path: bodies, query strings and headers may carry secrets.
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({
          id: req.id,
          method: req.method,
          path: req.url.split('?')[0],
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
    }),
  );
  app.use(helmet());
  if (ctx.config.corsOrigins.length) {
    app.use(cors({ origin: ctx.config.corsOrigins, credentials: false, maxAge: 600 }));
  }
  app.use(express.json({ limit: ctx.config.bodyLimit }));

  // WebSocket log streams (upgrades attached by attachWebSockets): ahead of the /api router.
  app.use(logSockets(ctx));
  const api = express.Router();
  api.use(methodNotAllowed([...routes, ...DOCUMENTED_GETS.map((path) => ({ method: 'get', path }))]));
  mountRoutes(api, routes, {
    db: ctx.db,
    authenticate: createAuthenticator(ctx.db, ctx.tokens, ctx.principals),
    validateResponses: ctx.config.validateResponses,
    log: ctx.log,
  });
  mountDocs(api, openapi);
  app.use('/api', api);
  app.use((_req, _res, next) => next(notFound()));
  app.use(errorHandler(ctx.log));
  return { app, routes, openapi };
}
