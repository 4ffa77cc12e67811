// Warehouses beyond their REST bodies: the outbound options of calls to their engines, the connection test and its status.
export * from './outbound.js';
export * from './connection-test.js';
