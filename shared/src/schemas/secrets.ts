import { Type, type Static } from '@sinclair/typebox';
import { SecretKeySelector } from '../connectors/secret.js';

// Spec 2.14 and 4.8: the secrets of the worker namespace that secret fields
// may reference. Names and keys only: no response carries a value.

const SecretName = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: SecretKeySelector.properties.name.pattern,
  description: 'Name of the Secret (DNS-1123 subdomain)',
});
const SecretKey = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: SecretKeySelector.properties.key.pattern,
  description: 'A key of the Secret',
});

const Ids = (description: string) =>
  Type.Array(Type.String({ format: 'uuid' }), { maxItems: 1000, uniqueItems: true, description });

export const WorkerSecretRead = Type.Object(
  {
    name: SecretName,
    keys: Type.Array(SecretKey, { description: 'The keys a reference may name, sorted' }),
    managed: Type.Boolean({
      description: 'Created by Sluice for the inline secrets of a resource (label sluice.dev/managed)',
    }),
    allowed_team_ids: Type.Optional(
      Ids('Superusers only: the teams granted the secret (annotation sluice.dev/allowed-teams)'),
    ),
    allowed_env_ids: Type.Optional(
      Ids('Superusers only: the environments granted the secret (annotation sluice.dev/allowed-envs)'),
    ),
  },
  { $id: 'WorkerSecretRead', additionalProperties: false },
);
export type WorkerSecretRead = Static<typeof WorkerSecretRead>;
export const WorkerSecretList = Type.Array(WorkerSecretRead, { $id: 'WorkerSecretList' });

export const WorkerSecretCreate = Type.Object(
  {
    name: SecretName,
    data: Type.Record(Type.String(), Type.String({ maxLength: 65536 }), {
      minProperties: 1,
      maxProperties: 256,
      propertyNames: { minLength: 1, maxLength: 253, pattern: SecretKeySelector.properties.key.pattern },
      description: 'Values by key (plain text, not base64); keys are letters, digits, "-", "_" and "."',
    }),
    allowed_team_ids: Type.Optional(
      Ids(
        'Teams that may reference the secret. With neither list, a new secret is granted to the ' +
          "caller's teams and a replaced one keeps its grant",
      ),
    ),
    allowed_env_ids: Type.Optional(Ids('Environments whose every team may reference the secret')),
  },
  { $id: 'WorkerSecretCreate', additionalProperties: false },
);
export type WorkerSecretCreate = Static<typeof WorkerSecretCreate>;

export const WorkerSecretNameParams = Type.Object({ name: SecretName });
