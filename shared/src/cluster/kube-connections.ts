import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';

// @kubernetes/client-node 2.0 builds a new undici Agent for every API call
// (KubeConfig.applySecurityAuthentication → createDispatcher), so each
// request opens and handshakes its own TLS connection and leaves an idle
// keep-alive socket behind. Measured in bench/operator: TLS set-up was the
// operator's top CPU cost and its memory grew by ~200 KiB per object. Until
// the client caches its dispatchers itself, we do: one Agent per API server
// and TLS identity, reused by every call made through this KubeConfig.

type CreateDispatcher = (cluster: unknown, agentOptions: Record<string, unknown>) => unknown;
const POOLED = Symbol('sluice.pooledDispatchers');

/** Makes every API client of `kc` share connections (idempotent); returns `kc`. */
export function reuseConnections(kc: KubeConfig): KubeConfig {
  const target = kc as unknown as { createDispatcher?: CreateDispatcher; [POOLED]?: true };
  if (target[POOLED] || typeof target.createDispatcher !== 'function') return kc;
  const create = target.createDispatcher.bind(kc);
  const cache = new Map<string, unknown>();
  target.createDispatcher = (cluster, agentOptions) => {
    const key = identity(cluster, agentOptions);
    if (!cache.has(key)) cache.set(key, create(cluster, agentOptions));
    return cache.get(key);
  };
  target[POOLED] = true;
  return kc;
}

/** The server and the TLS material: a rotated client certificate gets a new Agent. */
function identity(cluster: unknown, options: Record<string, unknown>): string {
  const hash = createHash('sha256');
  const c = (cluster ?? {}) as { server?: string; proxyUrl?: string };
  hash.update(`${c.server ?? ''}\0${c.proxyUrl ?? ''}\0`);
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']) {
    const v = options[k];
    hash.update(`${k}=`);
    if (Buffer.isBuffer(v) || typeof v === 'string') hash.update(v);
    else if (v !== undefined) hash.update(String(v));
    hash.update('\0');
  }
  return hash.digest('hex');
}
