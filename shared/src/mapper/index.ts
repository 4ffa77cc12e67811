// Public surface of the mapper (spec 2.10): see README.md in this folder.
export { compileMapper, processMapper, type CompiledMapper, type MapperRow } from './compile.js';
export {
  decryptValue,
  isEncryptedValue,
  mapperCryptoStats,
  MapperDecryptError,
  ENCRYPTED_PREFIX,
  PBKDF2_ITERATIONS,
} from './crypto.js';
export { parsePath, toPipePath } from './path.js';
export {
  CAST_TYPES,
  ENCRYPT_METHODS,
  HASH_METHODS,
  TEMPORAL_CASTS,
  mapperConfigSchema,
  mapperRuleSchema,
  type CastType,
  type ConcatenateEntry,
  type EncryptMethod,
  type HashMethod,
  type MapperRule,
} from './rule.js';
export { SUPPORTED_DIRECTIVES } from './temporal.js';
export {
  assertMapperConfig,
  assertPrimaryKeyForTableTarget,
  hasPrimaryKey,
  MapperConfigError,
  validateMapperConfig,
  type MapperIssue,
  type MapperIssueLoc,
} from './validate.js';
