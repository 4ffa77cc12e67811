// Public surface of @sluice/shared: what the gateway, the operator and the
// workers all use. One definition of each thing lives here.
export * from './version.js';
export * from './schemas/common.js';
export * from './schemas/identity.js';
export * from './crypto/secret-box.js';
export * from './ports/cluster.js';
export * from './cluster/index.js';
export * from './ports/worker-runtime.js';
export * from './mapper/index.js';
export * from './connectors/index.js';
export * from './schemas/registry.js';
export * from './validation/ajv-issues.js';
export * from './ports/secret-store.js';
export * from './secrets/index.js';
export * from './schemas/secrets.js';
export * from './catalog/index.js';
export * from './schemas/catalog.js';
export * from './util/abortable-sleep.js';
export * from './util/canonical-json.js';
export * from './util/one-line.js';
export * from './net/index.js';
export * from './databricks/index.js';
export * from './warehouses/index.js';
export * from './schemas/warehouses.js';
export * from './schemas/backfills.js';
export * from './schemas/deletions.js';
export * from './schemas/preview.js';
