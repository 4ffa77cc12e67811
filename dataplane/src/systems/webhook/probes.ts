import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { OutboundAddressDeniedError, type OutboundPolicy } from '@sluice/shared/net';
import { oneLine } from '@sluice/shared/util';
import { describeNetworkCode, SystemFailure } from '../failure.js';

// check-credentials of a WEBHOOK_TARGET (spec 4.5). It must not deliver
// anything: a receiver would take any POST for a batch of rows. So the check
// sends a HEAD request to the URL with the configured headers and
// authentication and no body, under the outbound policy, with no redirect
// followed. A 401 or 403 means the credentials were refused; any other answer
// below 500 (405 Method Not Allowed included: many receivers only take POST)
// means the endpoint is reachable, TLS included; a 5xx or no answer fails.

export interface WebhookCheckOptions {
  policy: OutboundPolicy;
  timeoutMs: number;
}

export interface WebhookCheck {
  ok: boolean;
  message: string;
  status?: number;
}

function authHeaders(config: Record<string, unknown>): Record<string, string> {
  const str = (k: string) => (typeof config[k] === 'string' ? (config[k] as string) : undefined);
  switch (str('auth_type') ?? 'none') {
    case 'basic':
      return {
        Authorization: `Basic ${Buffer.from(`${str('auth_username') ?? ''}:${str('auth_password') ?? ''}`).toString('base64')}`,
      };
    case 'bearer':
      return { Authorization: `Bearer ${str('bearer_token') ?? ''}` };
    case 'header':
      return { [str('auth_header_name') ?? 'X-API-Key']: str('auth_header_value') ?? '' };
    default:
      return {};
  }
}

export function checkWebhook(
  config: Record<string, unknown>,
  opts: WebhookCheckOptions,
): Promise<WebhookCheck> {
  let url: URL;
  try {
    url = new URL(String(config.url ?? ''));
  } catch {
    return Promise.reject(new SystemFailure('The webhook URL is not a valid URL'));
  }
  const where = url.host;
  try {
    opts.policy.assertHost(url.hostname);
  } catch (e) {
    return Promise.reject(new SystemFailure((e as Error).message));
  }
  const headers: Record<string, string> = {
    'User-Agent': 'Sluice-Webhook/1 (pre-flight)',
    ...((config.headers as Record<string, string> | undefined) ?? {}),
    ...authHeaders(config),
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'HEAD', headers, lookup: opts.policy.lookup, timeout: opts.timeoutMs },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        if (status === 401 || status === 403) {
          resolve({
            ok: false,
            status,
            message: `The webhook at ${where} refused the credentials (HTTP ${status})`,
          });
        } else if (status >= 500) {
          resolve({
            ok: false,
            status,
            message: `The webhook at ${where} answered HTTP ${status} (a server error)`,
          });
        } else {
          resolve({
            ok: true,
            status,
            message: `The webhook at ${where} is reachable (HTTP ${status} to a HEAD request; no row was sent)`,
          });
        }
      },
    );
    const deadline = setTimeout(
      () => req.destroy(new SystemFailure(`No answer from ${where} within the time limit`)),
      opts.timeoutMs,
    );
    req.on('timeout', () => req.destroy(new SystemFailure(`No answer from ${where} within the time limit`)));
    req.on('close', () => clearTimeout(deadline));
    req.on('error', (e: Error & { code?: string }) => {
      clearTimeout(deadline);
      if (e instanceof SystemFailure) return reject(e);
      if (e instanceof OutboundAddressDeniedError) return reject(new SystemFailure(e.message));
      const said = describeNetworkCode(e.code, where);
      if (said) return reject(new SystemFailure(said));
      if (/certificate|self[- ]signed|SSL|TLS/i.test(e.message)) {
        return reject(new SystemFailure(`The TLS connection to ${where} failed: ${oneLine(e)}`));
      }
      reject(new SystemFailure(`The webhook at ${where} could not be reached (${e.code ?? oneLine(e)})`));
    });
    req.end();
  });
}
