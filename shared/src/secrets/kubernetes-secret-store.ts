import { ApiException, CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { InvalidError } from '../cluster/errors.js';
import {
  type SecretMetadata,
  type SecretStorePort,
  type SecretSummary,
  type StoredSecret,
  type SecretScope,
} from '../ports/secret-store.js';
import { resolveSecretRef } from './grants.js';

// Spec 2.14 with the Kubernetes adapter: secret values live in Kubernetes
// Secrets of the worker namespace, where worker pods can mount them and
// `valueFrom.secretKeyRef` means what it means in Kubernetes. Encryption at
// rest is the cluster's (an EncryptionConfiguration for secrets in the API
// server); Sluice never writes a value anywhere else. The grant of a Secret
// (who may reference it, secrets/grants.ts) is in its annotations, where
// `kubectl annotate` and GitOps manifests put it.

const decode = (data: Record<string, string> | undefined): Record<string, string> =>
  Object.fromEntries(
    Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );

function created(s: V1Secret): Date {
  const t = s.metadata?.creationTimestamp as unknown;
  return t instanceof Date ? t : new Date(String(t ?? 0));
}

function code(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** The API server's reason, without the object (which could hold values). */
function invalid(error: unknown): unknown {
  if (code(error) !== 422 && code(error) !== 400) return error;
  const body = (error as ApiException<unknown>).body;
  let message = 'The API server refused the secret';
  try {
    message = (JSON.parse(String(body)) as { message?: string }).message ?? message;
  } catch {
    // keep the generic message
  }
  return new InvalidError(message);
}

export class KubernetesSecretStore implements SecretStorePort {
  readonly adapter = 'kubernetes' as const;
  private readonly api: CoreV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
  }

  async put(
    namespace: string,
    name: string,
    data: Record<string, string>,
    meta: SecretMetadata = {},
  ): Promise<void> {
    // stringData would be merged into existing data on update; the port
    // replaces data whole, so send `data` (base64) on both paths.
    const body: V1Secret = {
      metadata: { name, namespace, labels: meta.labels ?? {}, annotations: meta.annotations ?? {} },
      type: 'Opaque',
      data: Object.fromEntries(
        Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
      ),
    };
    try {
      await this.api.replaceNamespacedSecret({ name, namespace, body });
    } catch (error) {
      if (code(error) !== 404) throw invalid(error);
      try {
        await this.api.createNamespacedSecret({ namespace, body });
      } catch (e) {
        throw invalid(e);
      }
    }
  }

  async get(namespace: string, name: string): Promise<StoredSecret | undefined> {
    try {
      const s = await this.api.readNamespacedSecret({ name, namespace });
      return {
        name,
        data: decode(s.data),
        labels: s.metadata?.labels ?? {},
        annotations: s.metadata?.annotations ?? {},
        createdAt: created(s),
      };
    } catch (error) {
      if (code(error) === 404) return undefined;
      throw error;
    }
  }

  async resolve(namespace: string, ref: { name: string; key: string }, scope: SecretScope): Promise<string> {
    return resolveSecretRef(this, namespace, ref, scope);
  }

  async list(namespace: string): Promise<SecretSummary[]> {
    const list = await this.api.listNamespacedSecret({ namespace });
    return list.items
      .map((s) => ({
        name: s.metadata?.name ?? '',
        keys: Object.keys(s.data ?? {}).sort(),
        labels: s.metadata?.labels ?? {},
        annotations: s.metadata?.annotations ?? {},
        createdAt: created(s),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async delete(namespace: string, name: string): Promise<boolean> {
    try {
      await this.api.deleteNamespacedSecret({ name, namespace });
      return true;
    } catch (error) {
      if (code(error) === 404) return false;
      throw error;
    }
  }
}
