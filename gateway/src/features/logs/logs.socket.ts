import type { IncomingMessage, Server } from 'node:http';
import { isUuid } from '@sluice/shared/schemas';
import type { Express, Request, RequestHandler } from 'express';
import expressWs from 'express-ws';
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import { resolvePrincipal } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/principal.js';
import type { TokenClaims } from '../../auth/tokens.js';
import type { GatewayContext } from '../../context.js';
import { HttpError } from '../../http/errors.js';
import {
  DEFAULT_TAIL,
  MAX_TAIL,
  connectorSides,
  followWorker,
  pipelineSides,
  workerOf,
  type LogSide,
} from './logs.service.js';

// The WebSocket log streams of spec 4.4 and 4.5: `/api/pipelines/{id}/logs`
// and `/api/connectors/{id}/logs` (docs/api.md, "Log streams").
//
// express-ws bridges the upgrade into Express: it completes the handshake,
// then runs the request through the app as `GET <path>/.websocket` with
// `req.ws` set. The streams are one middleware ahead of the /api router (not
// `app.ws()` routes, which are GET routes the OpenAPI document would have to
// describe), and every refusal after the handshake is a close frame with a
// code, never an HTTP status the browser cannot read.

/** RFC 6455 close codes the streams use. */
export const CLOSE = { normal: 1000, goingAway: 1001, policy: 1008, tryAgainLater: 1013 } as const;

/** The marker subprotocol of spec 4.4; the server echoes it (never the token). */
export const AUTH_PROTOCOL = 'Authorization';

/** A client that reads slower than its workers write: closed once this much waits unsent. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const PING_INTERVAL_MS = 30_000;

const STREAM_PATH = /^\/api\/(connectors|pipelines)\/([^/]+)\/logs\/\.websocket$/;

/**
 * The bearer token among the offered subprotocols: the spec's `Bearer <token>`
 * (a space, so not a valid subprotocol token: browsers and most clients refuse
 * to send it, but the raw header carries it), or the browser-safe
 * `bearer.<token>` (a JWT is made of token characters and dots). Non-browser
 * clients may also send the `Authorization: Bearer <token>` header.
 */
export function tokenOf(req: IncomingMessage): string | undefined {
  const offered = String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim());
  for (const p of offered) {
    const spec = /^bearer\s+(\S+)$/i.exec(p);
    if (spec) return spec[1];
    const safe = /^bearer\.(\S+)$/i.exec(p);
    if (safe) return safe[1];
  }
  const header = /^bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  return header?.[1];
}

/** Echoes `Authorization` when offered, whatever else was (the token must not come back in a header). */
function handleProtocols(protocols: string[] | Set<string>): string | false {
  for (const p of protocols) if (p.toLowerCase() === AUTH_PROTOCOL.toLowerCase()) return p;
  return false;
}

async function authenticate(
  ctx: GatewayContext,
  token: string | undefined,
): Promise<{ claims: TokenClaims; principal: Principal } | undefined> {
  if (!token) return undefined;
  let claims;
  try {
    claims = ctx.tokens.verify(token);
  } catch {
    return undefined;
  }
  const principal = await resolvePrincipal(ctx.db, claims, ctx.principals);
  return principal ? { claims, principal } : undefined;
}

/** The sides of the stream, if the caller may read it (throws the 403/404 of the HTTP reads). */
function sidesOf(ctx: GatewayContext, kind: 'connectors' | 'pipelines', p: Principal, id: string) {
  return kind === 'connectors' ? connectorSides(ctx, p, id) : pipelineSides(ctx, p, id);
}

/**
 * Why the caller may no longer read the stream (a close reason), or
 * undefined: the token expired, was revoked (logout, password change), its
 * user was deactivated or deleted, or left the owning team. Asked again every
 * `logStreamRecheckMs`; a failure to ask (the database unreachable) is not a
 * refusal, the next round asks again.
 */
async function lostAccess(
  ctx: GatewayContext,
  kind: 'connectors' | 'pipelines',
  id: string,
  claims: TokenClaims,
): Promise<string | undefined> {
  if (claims.exp * 1000 <= Date.now()) return 'Token expired';
  const principal = await resolvePrincipal(ctx.db, claims, ctx.principals);
  if (!principal) return 'Unauthorized';
  try {
    await sidesOf(ctx, kind, principal, id);
  } catch (err) {
    if (err instanceof HttpError) return typeof err.detail === 'string' ? err.detail : 'Forbidden';
    throw err;
  }
  return undefined;
}

/** A close reason: at most 123 bytes (RFC 6455), plain text. */
function reason(text: string): string {
  return Buffer.byteLength(text) <= 123 ? text : text.slice(0, 100);
}

function tailOf(req: Request): number {
  const raw = Number((req.query as Record<string, unknown>).tail ?? DEFAULT_TAIL);
  return Number.isInteger(raw) ? Math.min(Math.max(raw, 0), MAX_TAIL) : DEFAULT_TAIL;
}

/** What one message carries: the line as the worker wrote it, and in a pipeline's stream the side. */
function frame(side: LogSide, line: string): string {
  return JSON.stringify(side.side ? { side: side.side, line } : { line });
}

async function stream(ctx: GatewayContext, ws: WebSocket, req: Request, log: Logger): Promise<void> {
  const match = STREAM_PATH.exec(req.path);
  if (!match) {
    ws.close(CLOSE.policy, 'No such stream');
    return;
  }
  const [, kind, id] = match as unknown as [string, 'connectors' | 'pipelines', string];
  const caller = await authenticate(ctx, tokenOf(req));
  if (!caller) {
    ws.close(CLOSE.policy, 'Unauthorized');
    return;
  }
  let sides: LogSide[];
  try {
    if (!isUuid(id)) throw new HttpError(404, 'Not Found');
    sides = await sidesOf(ctx, kind, caller.principal, id);
  } catch (err) {
    const detail = err instanceof HttpError && typeof err.detail === 'string' ? err.detail : 'Unavailable';
    if (!(err instanceof HttpError)) log.error({ err: (err as Error).message, kind }, 'Log stream refused');
    ws.close(CLOSE.policy, reason(detail));
    return;
  }
  if (ws.readyState !== ws.OPEN) return;
  const runtime = ctx.workers;
  if (!runtime) {
    // No worker runtime reachable from this gateway: nothing will ever come.
    ws.close(CLOSE.tryAgainLater, 'Worker logs are not available on this gateway');
    return;
  }

  const ac = new AbortController();
  let alive = true;
  const ping = setInterval(() => {
    if (!alive) return ws.terminate();
    alive = false;
    ws.ping();
  }, PING_INTERVAL_MS);
  ws.on('pong', () => (alive = true));
  // Access is checked at the handshake and then again and again: a stream
  // ends (1008) once its caller logged out, changed password, was
  // deactivated or left the team, within `logStreamRecheckMs`.
  let checking = false;
  const recheck = setInterval(() => {
    if (checking) return;
    checking = true;
    lostAccess(ctx, kind, id, caller.claims)
      .then((why) => {
        if (why && ws.readyState === ws.OPEN) ws.close(CLOSE.policy, reason(why));
      })
      .catch((err: unknown) => log.warn({ err: (err as Error).message, kind }, 'Log stream re-check failed'))
      .finally(() => (checking = false));
  }, ctx.config.logStreamRecheckMs);
  ws.once('close', () => {
    clearInterval(ping);
    clearInterval(recheck);
    ac.abort();
  });
  // Clients only listen; anything they send is ignored.
  ws.on('message', () => undefined);

  const tail = tailOf(req);
  await Promise.all(
    sides.map(async (side) => {
      try {
        const worker = await workerOf(ctx, side.connectorId);
        for await (const line of followWorker(runtime, worker, tail, ac.signal)) {
          if (ws.readyState !== ws.OPEN) break;
          if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
            ws.close(CLOSE.tryAgainLater, 'The client reads too slowly');
            break;
          }
          ws.send(frame(side, line));
        }
      } catch (err) {
        log.warn({ err: (err as Error).message, kind }, 'Log stream failed');
        ws.close(CLOSE.tryAgainLater, 'The log stream failed');
      }
    }),
  );
}

/** The middleware serving the streams (mounted ahead of the /api router; ignores plain HTTP requests). */
export function logSockets(ctx: GatewayContext): RequestHandler {
  return (req, _res, next) => {
    const ws = (req as { ws?: WebSocket }).ws;
    if (!ws) return next();
    (req as { wsHandled?: boolean }).wsHandled = true;
    const log = (req as { log?: Logger }).log ?? ctx.log;
    stream(ctx, ws, req, log).catch((err: unknown) => {
      log.error({ err: (err as Error).message }, 'Log stream failed');
      ws.close(CLOSE.tryAgainLater, 'The log stream failed');
    });
  };
}

/**
 * Accepts WebSocket upgrades on `server` for `app` (whose `logSockets`
 * middleware serves them); `close()` ends every open stream (1001).
 */
export function attachWebSockets(app: Express, server: Server): { close(): void } {
  const instance = expressWs(app, server, {
    leaveRouterUntouched: true,
    wsOptions: { handleProtocols, maxPayload: 64 * 1024 },
  });
  const wss = instance.getWss();
  return {
    close: () => {
      for (const client of wss.clients) client.close(CLOSE.goingAway, 'The gateway is shutting down');
    },
  };
}
