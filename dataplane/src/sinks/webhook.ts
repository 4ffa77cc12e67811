import { createHash, createHmac } from 'node:crypto';
import {
  OutboundRequestError,
  requestJson,
  type JsonResponse,
  type OutboundPolicy,
} from '@sluice/shared/net';
import { abortableSleep } from '@sluice/shared/util';
import type { Sink, SinkRecord } from '../contracts.js';
import { withoutRepeatedTruncates } from '../target/truncate-barrier.js';

// The WEBHOOK_TARGET sink: rows as JSON to an HTTP endpoint, `batch_size`
// rows per request, under the outbound-address policy (SSRF). A request that
// fails for a reason that may pass (network error, timeout, 408, 429, 5xx) is
// retried with exponential back-off and jitter, at most `max_retries` times;
// any other answer fails the batch at once with its status and a short
// excerpt of its body. Each element of the body says what happened to which
// row (`op`, `table`, `key`, `row`): a receiver needs deletes told apart from
// upserts, and a truncate (every row of the table gone) from both. docs/data-plane-postgres.md describes the request.

/** WebhookTargetConfig with its secret fields resolved (the framework's job). */
export interface WebhookTargetSettings {
  url: string;
  method?: 'POST' | 'PUT' | 'PATCH';
  headers?: Record<string, string>;
  auth_type?: 'none' | 'basic' | 'bearer' | 'header';
  auth_username?: string;
  auth_password?: string;
  bearer_token?: string;
  auth_header_name?: string;
  auth_header_value?: string;
  signing_secret?: string;
  batch_size?: number;
  timeout_ms?: number;
  max_retries?: number;
  retry_backoff_ms?: number;
}

export interface WebhookSinkOptions {
  policy: OutboundPolicy;
  /** Plain http:// URLs allowed (development; the schema lets users type them). */
  allowHttp?: boolean;
  /** Extra trusted CA certificates (PEM). */
  extraCa?: readonly string[];
  /** Longest single back-off (ms); default 5 minutes. */
  maxBackoffMs?: number;
  /** For tests of the jitter: a number in [0, 1). */
  random?: () => number;
}

/** One element of a request body; a `truncate` (key and row `{}`) says every row of `table` is gone. */
export interface WebhookRow {
  op: 'upsert' | 'delete' | 'truncate';
  table: string;
  key: Record<string, unknown>;
  row: Record<string, unknown>;
}

/** The endpoint refused a batch; the message has the status and a body excerpt, never a credential. */
export class WebhookDeliveryError extends Error {
  override readonly name = 'WebhookDeliveryError';
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

const EXCERPT_CHARS = 200;

export function createWebhookSink(settings: WebhookTargetSettings, options: WebhookSinkOptions): Sink {
  const url = new URL(settings.url);
  const batchSize = settings.batch_size ?? 1;
  const maxRetries = settings.max_retries ?? 5;
  const firstBackoff = settings.retry_backoff_ms ?? 1000;
  const maxBackoff = options.maxBackoffMs ?? 300_000;
  const random = options.random ?? Math.random;
  const baseHeaders = { 'User-Agent': 'Sluice-Webhook/1', ...settings.headers, ...authHeaders(settings) };
  const http = {
    policy: options.policy,
    timeoutMs: settings.timeout_ms ?? 10_000,
    ...(options.allowHttp ? { allowHttp: true } : {}),
    ...(options.extraCa ? { extraCa: options.extraCa } : {}),
    maxResponseBytes: 1024 * 1024,
  };

  async function send(body: WebhookRow | WebhookRow[], signal: AbortSignal): Promise<void> {
    const text = JSON.stringify(body);
    const headers: Record<string, string> = {
      ...baseHeaders,
      // The same batch retried (or re-sent after a restart) carries the same
      // id: a receiver can drop the duplicates at-least-once delivery brings.
      'X-Sluice-Delivery': createHash('sha256').update(text).digest('hex').slice(0, 32),
    };
    if (settings.signing_secret) {
      headers['X-Sluice-Signature'] =
        `sha256=${createHmac('sha256', settings.signing_secret).update(text).digest('hex')}`;
    }
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      let response: JsonResponse | null = null;
      let failure: string;
      try {
        response = await requestJson(url, { method: settings.method ?? 'POST', headers, body, signal }, http);
        if (response.status >= 200 && response.status < 300) return;
        failure = `${url.host} answered ${response.status}${excerpt(response.text)}`;
        if (!retryable(response.status))
          throw new WebhookDeliveryError(`The webhook refused the batch: ${failure}`, response.status);
      } catch (error) {
        if (error instanceof WebhookDeliveryError) throw error;
        signal.throwIfAborted();
        // A refused address or scheme, or an oversized answer, will not pass by waiting.
        if (error instanceof OutboundRequestError && !['network', 'timeout'].includes(error.kind)) {
          throw new WebhookDeliveryError(`The webhook cannot be called: ${error.message}`, null);
        }
        failure = error instanceof Error ? error.message : String(error);
      }
      if (attempt >= maxRetries) {
        throw new WebhookDeliveryError(
          `The webhook failed ${attempt + 1} time${attempt ? 's' : ''}, giving up: ${failure}`,
          response?.status ?? null,
        );
      }
      // Full jitter on an exponential ceiling; a Retry-After longer than it is honoured.
      const ceiling = Math.min(maxBackoff, firstBackoff * 2 ** attempt);
      const delay = Math.max(ceiling / 2 + (random() * ceiling) / 2, retryAfterMs(response, maxBackoff));
      await abortableSleep(delay, signal);
    }
  }

  return {
    async write(batch: readonly SinkRecord[], signal: AbortSignal, ready?: Promise<void>): Promise<void> {
      const rows = withoutRepeatedTruncates(batch).map(toWebhookRow);
      await ready;
      for (let at = 0; at < rows.length; at += batchSize) {
        const chunk = rows.slice(at, at + batchSize);
        await send(batchSize === 1 ? (chunk[0] as WebhookRow) : chunk, signal);
      }
    },
    async close(): Promise<void> {
      // Requests do not outlive `write`: nothing is held open.
    },
  };
}

function toWebhookRow(record: SinkRecord): WebhookRow {
  if (record.op === 'truncate') return { op: 'truncate', table: record.table, key: {}, row: {} };
  const key = Object.fromEntries(record.keyColumns.map((k) => [k, record.row[k] ?? null]));
  return { op: record.op, table: record.table, key, row: record.row };
}

function authHeaders(s: WebhookTargetSettings): Record<string, string> {
  switch (s.auth_type ?? 'none') {
    case 'basic':
      return {
        Authorization: `Basic ${Buffer.from(`${s.auth_username ?? ''}:${s.auth_password ?? ''}`).toString('base64')}`,
      };
    case 'bearer':
      return { Authorization: `Bearer ${s.bearer_token ?? ''}` };
    case 'header':
      return { [s.auth_header_name ?? 'X-API-Key']: s.auth_header_value ?? '' };
    default:
      return {};
  }
}

/** 408, 429 and 5xx may pass on a later try; other statuses will not. */
const retryable = (status: number): boolean => status === 408 || status === 429 || status >= 500;

function retryAfterMs(response: JsonResponse | null, max: number): number {
  const header = response?.headers['retry-after'];
  if (typeof header !== 'string') return 0;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, max) : 0;
}

/** `: <first characters of the body>` on one line, or nothing for an empty body. */
function excerpt(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (!line) return '';
  return `: ${line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS)}…` : line}`;
}
