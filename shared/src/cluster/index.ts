export * from './embedded-cluster.js';
export * from './errors.js';
export * from './label-selector.js';
export * from './merge-patch.js';
