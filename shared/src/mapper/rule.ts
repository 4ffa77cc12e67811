// The shape of a mapper column rule (spec 2.10) as a TypeScript type and as a
// JSON Schema. The schema is a plain object so that ajv and the OpenAPI
// document can share it; it only uses keywords common to JSON Schema draft-07
// and 2020-12, so either Ajv class (and OpenAPI 3.1) accepts it unchanged.
// What a schema cannot say (path syntax, strftime directives, unique keys) is
// checked by validateMapperConfig.

export const CAST_TYPES = ['string', 'int', 'float', 'bool', 'date', 'datetime', 'time'] as const;
export const TEMPORAL_CASTS = ['date', 'datetime', 'time'] as const;
export const HASH_METHODS = ['md5', 'sha256', 'sha512'] as const;
export const ENCRYPT_METHODS = ['aes-256-gcm'] as const;

export type CastType = (typeof CAST_TYPES)[number];
export type HashMethod = (typeof HASH_METHODS)[number];
export type EncryptMethod = (typeof ENCRYPT_METHODS)[number];

/** `error` carries the failures of a row, so no column may take that name. */
export const ERROR_KEY = 'error';
/** Column names a row cannot carry: `error`, and `__proto__`, which names an object's prototype. */
export const RESERVED_KEYS = [ERROR_KEY, '__proto__'] as const;

export interface ConcatenateEntry {
  path?: string | null;
  static?: string | null;
}

/** One output column. Optional fields also accept null, read as absent. */
export interface MapperRule {
  key: string;
  path?: string | null;
  static?: string | null;
  cast?: CastType | null;
  cast_format?: string | null;
  primary_key?: boolean | null;
  nullable?: boolean | null;
  concatenate_fields?: ConcatenateEntry[] | null;
  hash_method?: HashMethod | null;
  encrypt_method?: EncryptMethod | null;
  encrypt_key?: string | null;
}

const optionalString = { type: ['string', 'null'] } as const;
const optionalBool = { type: ['boolean', 'null'] } as const;
const optionalEnum = (values: readonly string[]) => ({ enum: [...values, null] });
// An empty path means "no path" (rule 3); an empty literal is still a literal.
const isSet = (field: string) => ({
  required: [field],
  properties: { [field]: field === 'path' ? { type: 'string', minLength: 1 } : { type: 'string' } },
});

export const concatenateEntrySchema = {
  type: 'object',
  additionalProperties: false,
  properties: { path: optionalString, static: optionalString },
  anyOf: [isSet('path'), isSet('static')],
} as const;

export const mapperRuleSchema = {
  title: 'MapperRule',
  description: 'One output column of a mapper (spec 2.10).',
  type: 'object',
  additionalProperties: false,
  required: ['key'],
  properties: {
    key: { type: 'string', minLength: 1, not: { enum: [...RESERVED_KEYS] } },
    path: optionalString,
    static: optionalString,
    cast: optionalEnum(CAST_TYPES),
    cast_format: optionalString,
    primary_key: optionalBool,
    nullable: optionalBool,
    concatenate_fields: {
      anyOf: [{ type: 'array', minItems: 1, items: concatenateEntrySchema }, { type: 'null' }],
    },
    hash_method: optionalEnum(HASH_METHODS),
    encrypt_method: optionalEnum(ENCRYPT_METHODS),
    encrypt_key: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }] },
  },
  allOf: [
    // A column needs something to read: a path, a literal or parts to join.
    {
      anyOf: [
        isSet('path'),
        isSet('static'),
        { required: ['concatenate_fields'], properties: { concatenate_fields: { type: 'array' } } },
      ],
    },
    // encrypt_method and encrypt_key go together.
    { if: isSet('encrypt_method'), then: isSet('encrypt_key') },
    { if: isSet('encrypt_key'), then: isSet('encrypt_method') },
    // A strftime format only means something for a temporal cast.
    {
      if: isSet('cast_format'),
      then: { required: ['cast'], properties: { cast: { enum: [...TEMPORAL_CASTS] } } },
    },
  ],
} as const;

export const mapperConfigSchema = {
  title: 'MapperConfig',
  description: 'The column rules of a mapper; keys must be unique.',
  type: 'array',
  items: mapperRuleSchema,
} as const;
