// Small helpers every package uses, and the version of the interface.
export * from './abortable-sleep.js';
export * from './canonical-json.js';
export * from './one-line.js';
export * from './version.js';
