// The JSON Schemas (TypeBox) of every REST body, with their static types.
export * from './backfills.js';
export * from './common.js';
export * from './connectors.js';
export * from './datamodels.js';
export * from './deletions.js';
export * from './identity.js';
export * from './pipelines.js';
export * from './preview.js';
export * from './registry.js';
export * from './secrets.js';
export * from './subscriptions.js';
export * from './warehouses.js';
