// The one translation of ajv errors into the spec's 422 items.
export * from './ajv-issues.js';
