import type { Static, TSchema } from '@sinclair/typebox';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseSpec {
  description: string;
  schema?: TSchema;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Ctx<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** The authenticated caller; routes with `auth: 'user'` always have one. */
  principal: Principal;
  req: Request;
  res: Response;
  log: Logger;
}

type Resolve<S> = S extends TSchema ? Static<S> : undefined;

/**
 * One route: its HTTP binding, its schemas and its handler. The same object
 * feeds Express (validation + auth) and the OpenAPI document, so the two
 * cannot disagree.
 */
export interface RouteSpec<
  P extends TSchema | undefined = TSchema | undefined,
  Q extends TSchema | undefined = TSchema | undefined,
  B extends TSchema | undefined = TSchema | undefined,
> {
  method: Method;
  /** Express syntax, relative to /api: `/users/:id`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  auth: 'public' | 'user';
  params?: P;
  query?: Q;
  body?: B;
  /**
   * The body as documented, when it is richer than what ajv checks first
   * (a library validates the rest and reports every issue at once).
   */
  documentedBody?: TSchema;
  /** `form` for the OAuth2 password form of login; JSON otherwise. */
  bodyEncoding?: 'json' | 'form';
  /** Honour the `Idempotency-Key` header (spec 4.10). */
  idempotent?: boolean;
  /** Body fields accepted (checked) and then dropped before the handler: read-only fields (http/read-only.ts). */
  ignoredBodyFields?: string[];
  /** Extra middleware run before validation (rate limits). */
  before?: RequestHandler[];
  responses: Record<number, ResponseSpec>;
  deprecated?: boolean;
  handler: (ctx: Ctx<Resolve<P>, Resolve<Q>, Resolve<B>>) => Promise<Reply>;
}

export type AnyRoute = RouteSpec<TSchema | undefined, TSchema | undefined, TSchema | undefined>;

export function route<
  P extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  B extends TSchema | undefined = undefined,
>(spec: RouteSpec<P, Q, B>): AnyRoute {
  return spec as unknown as AnyRoute;
}

export const ok = (body: unknown): Reply => ({ status: 200, body });
export const created = (body: unknown): Reply => ({ status: 201, body });
export const accepted = (body?: unknown): Reply => ({ status: 202, body });
export const noContent = (): Reply => ({ status: 204 });
/** 200 with an empty body (spec: logout, reset-password). */
export const emptyOk = (): Reply => ({ status: 200 });
