// Encryption of stored secrets under the service master key.
export * from './secret-box.js';
