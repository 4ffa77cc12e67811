import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rootCertificates } from 'node:tls';
import { oneLine } from '../util/one-line.js';
import { OutboundAddressDeniedError, type OutboundPolicy } from './outbound-policy.js';

// JSON over HTTPS to an address a user configured, under the outbound policy:
// HTTPS only unless `allowHttp` (a development setting), the system's trusted
// CAs plus the configured extra ones (never verification turned off), a
// deadline for the whole exchange, a cap on the response size, no redirects.

export interface OutboundHttpOptions {
  policy: OutboundPolicy;
  /** Deadline of one request, connect to last byte (ms). */
  timeoutMs: number;
  /** Plain HTTP allowed (development only). */
  allowHttp?: boolean;
  /** Extra trusted CA certificates (PEM), added to the system's. */
  extraCa?: readonly string[];
  /** Responses larger than this fail (bytes); default 32 MiB. */
  maxResponseBytes?: number;
}

export interface JsonResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed body; undefined when it was empty or not JSON (`text` has it). */
  json: unknown;
  text: string;
}

export type OutboundErrorKind = 'denied' | 'scheme' | 'timeout' | 'network' | 'too-large';

/** A request that got no HTTP answer. The message says why, never what was sent. */
export class OutboundRequestError extends Error {
  override readonly name = 'OutboundRequestError';
  constructor(
    readonly kind: OutboundErrorKind,
    message: string,
  ) {
    super(message);
  }
}

const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;

export function requestJson(
  url: URL,
  init: {
    method: 'GET' | 'POST' | 'PUT' | 'PATCH';
    headers?: Record<string, string>;
    body?: unknown;
    signal?: AbortSignal;
  },
  opts: OutboundHttpOptions,
): Promise<JsonResponse> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    if (!secure && !(url.protocol === 'http:' && opts.allowHttp)) {
      reject(new OutboundRequestError('scheme', `Only HTTPS is allowed (got ${url.protocol.slice(0, -1)})`));
      return;
    }
    try {
      opts.policy.assertHost(url.hostname);
    } catch (err) {
      reject(new OutboundRequestError('denied', (err as Error).message));
      return;
    }
    const payload = init.body === undefined ? undefined : Buffer.from(JSON.stringify(init.body));
    const headers: Record<string, string> = {
      Accept: 'application/json',
      ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) } : {}),
      ...init.headers,
    };
    const max = opts.maxResponseBytes ?? DEFAULT_MAX_BYTES;
    const options = {
      method: init.method,
      headers,
      lookup: opts.policy.lookup,
      signal: init.signal,
      ...(secure && opts.extraCa?.length ? { ca: [...rootCertificates, ...opts.extraCa] } : {}),
    };
    let settled = false;
    const fail = (err: OutboundRequestError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const req = (secure ? httpsRequest : httpRequest)(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > max) fail(new OutboundRequestError('too-large', `The response exceeded ${max} bytes`));
        else chunks.push(chunk);
      });
      res.on('error', (err) => fail(networkError(url, err)));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json, text });
      });
    });
    const timer = setTimeout(
      () =>
        fail(new OutboundRequestError('timeout', `${url.host} did not answer within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    req.on('error', (err) => fail(networkError(url, err)));
    req.end(payload);
  });
}

function networkError(url: URL, err: Error & { code?: string }): OutboundRequestError {
  if (err instanceof OutboundAddressDeniedError) return new OutboundRequestError('denied', err.message);
  if (err.name === 'AbortError') return new OutboundRequestError('timeout', 'The request was aborted');
  const code = err.code ? ` (${err.code})` : '';
  const what =
    err.code === 'ENOTFOUND'
      ? `${url.hostname} does not resolve`
      : err.code === 'ECONNREFUSED'
        ? `${url.host} refused the connection`
        : `Could not reach ${url.host}: ${oneLine(err)}`;
  return new OutboundRequestError('network', what.endsWith(code) ? what : `${what}${code}`);
}
