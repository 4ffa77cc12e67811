// Secret values out of resources (spec 2.14): the embedded store and the
// helpers that move inline values into it and redact them on reads; who may
// reference which secret (grants).
export { EmbeddedSecretStore } from './embedded-secret-store.js';
export {
  externalizeSecrets,
  redactSecrets,
  secretSlots,
  setAt,
  valueAt,
  type ExternalizeInput,
  type ExternalizeResult,
  type SecretIssue,
  type SecretSlot,
} from './externalize.js';
export * from './grants.js';
export * from './kubernetes-secret-store.js';
export * from './move-managed.js';
export * from './worker-env.js';
export * from './embedded-secret-store-migrations.js';
