// The ports of the brief: the cluster, the worker runtime and the secret store.
export * from './cluster.js';
export * from './worker-runtime.js';
export * from './secret-store.js';
