import {
  WorkerSecretCreate,
  WorkerSecretList,
  WorkerSecretNameParams,
  WorkerSecretRead,
} from '@sluice/shared/schemas';
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
      summary: 'Secrets of the worker namespace the caller may reference (names and keys, never values)',
      description:
        'A secret is usable only when granted: its annotation `sluice.dev/allowed-teams` names the ' +
        'team (comma-separated ids), or `sluice.dev/allowed-envs` its environment. The list holds the ' +
        'secrets granted to a team the caller acts for (member, or admin of its environment); a ' +
        'superuser sees every secret usable by someone, with its grant, and the managed ones. ' +
        '`managed` marks the secrets Sluice created for the inline secret values of its resources ' +
        '(label `sluice.dev/managed: "true"`, names `sluice-…`): each is usable by its own object only. ' +
        'Secrets labelled `sluice.dev/control-plane: "true"` are never listed nor usable.',
      responses: { 200: { description: 'The secrets, by name', schema: WorkerSecretList } },
      handler: async ({ principal }) => ok(await secrets.listSecrets(ctx, principal)),
    }),
    route({
      method: 'post',
      path: '/k8s-secrets',
      tag,
      auth: 'user',
      summary: 'Create or replace a secret of the worker namespace (superuser; embedded adapter)',
      description:
        'The data is replaced whole. `allowed_team_ids` / `allowed_env_ids` grant the secret (422 at ' +
        'an id that names nothing); with neither, a new secret is granted to the teams the caller acts ' +
        'for and a replaced one keeps its grant. Names starting with `sluice-` are reserved for managed ' +
        'secrets (409). With the kubernetes adapter, Secrets are created with the cluster tools and ' +
        'granted with their annotations (409).',
      body: WorkerSecretCreate,
      responses: {
        201: { description: 'Stored; the answer names the keys only', schema: WorkerSecretRead },
        403: forbidden403,
        409: { description: 'A reserved, managed or control-plane name, or the kubernetes adapter' },
        422: { description: 'An allowed id that names no team or environment' },
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
        409: {
          description: 'A managed secret (it goes with the resource that owns it), or a control-plane one',
        },
      },
      handler: async ({ principal, params }) => {
        await secrets.deleteSecret(ctx, principal, params.name);
        return noContent();
      },
    }),
  ];
}
