import {
  WorkerSecretCreate,
  WorkerSecretList,
  WorkerSecretNameParams,
  WorkerSecretRead,
} from '@sluice/shared';
import type { GatewayContext } from '../../context.js';
import { created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as secrets from './secrets.service.js';

const tag = 'secrets';
const forbidden403 = { description: 'Not a superuser' };

/**
 * Spec 2.14 and 4.8: the Secrets of the worker namespace (SLUICE_NAMESPACE)
 * that secret fields may reference with `valueFrom`. Names and keys only:
 * no response carries a value.
 */
export function secretRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/k8s-secrets',
      tag,
      auth: 'user',
      summary: 'Secrets of the worker namespace a secret field may reference (names and keys, never values)',
      description:
        '`managed` marks the secrets Sluice created for the inline secret values of its resources ' +
        '(label `sluice.dev/managed: "true"`, names `sluice-…`).',
      responses: { 200: { description: 'The secrets, by name', schema: WorkerSecretList } },
      handler: async () => ok(await secrets.listSecrets(ctx)),
    }),
    route({
      method: 'post',
      path: '/k8s-secrets',
      tag,
      auth: 'user',
      summary: 'Create or replace a secret of the worker namespace (superuser; embedded adapter)',
      description:
        'The data is replaced whole. Names starting with `sluice-` are reserved for managed secrets (409). ' +
        'With the kubernetes adapter, Secrets are created with the cluster tools (409).',
      body: WorkerSecretCreate,
      responses: {
        201: { description: 'Stored; the answer names the keys only', schema: WorkerSecretRead },
        403: forbidden403,
        409: { description: 'A reserved or managed name, or the kubernetes adapter' },
      },
      handler: async ({ principal, body }) => created(await secrets.putSecret(ctx, principal, body)),
    }),
    route({
      method: 'delete',
      path: '/k8s-secrets/:name',
      tag,
      auth: 'user',
      summary: 'Delete a secret of the worker namespace (superuser)',
      params: WorkerSecretNameParams,
      responses: {
        204: { description: 'Deleted' },
        403: forbidden403,
        404: { description: 'No such secret' },
        409: { description: 'A managed secret: it goes with the resource that owns it' },
      },
      handler: async ({ principal, params }) => {
        await secrets.deleteSecret(ctx, principal, params.name);
        return noContent();
      },
    }),
  ];
}
