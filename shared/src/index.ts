// Public surface of @sluice/shared: what the gateway, the operator and the
// workers all use. One definition of each thing lives here.
export * from './version.js';
export * from './mapper/index.js';
