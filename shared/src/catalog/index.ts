// The catalog's custom resources: schemas, types, labels and state machines.
export * from './resources.js';
export * from './states.js';
export * from './replicas.js';
export * from './effective-state.js';
export * from './worker-config.js';
export * from './worker-secret-owners.js';
export * from './targets.js';
export * from './crd.js';
export * from './argocd-health.js';
