export * from './embedded-cluster.js';
export * from './errors.js';
export * from './label-selector.js';
export * from './merge-patch.js';
export * from './kubernetes-cluster.js';
export * from './kube-connections.js';
export * from './watch-namespaces.js';
export { isNamespaceName } from './validation.js';
export * from './embedded-cluster-migrations.js';
