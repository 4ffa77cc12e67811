// The Databricks workspace REST client of warehouses (spec 2.12): settings, the three-call connection test, the statement relay.
export * from './settings.js';
export * from './client.js';
export * from './connection-test.js';
export * from './statements.js';
