import { createHash } from 'node:crypto';
import { Ajv, type AnySchema, type ErrorObject } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import avro from 'avsc';
import { type SchemaType } from '@sluice/shared/schemas';
import { canonicalJson, oneLine } from '@sluice/shared/util';

// Parsing, type detection, validation and identity of a registered
// definition. Pure functions: no database, no HTTP.

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as <T>(ajv: T) => T;

/** A definition that cannot be registered; `message` is fit for the client. */
export class DefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DefinitionError';
  }
}

export interface ParsedDefinition {
  schemaType: SchemaType;
  /** SHA-256 (hex) of the canonical form. */
  fingerprint: string;
}

const AVRO_PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);
const AVRO_COMPLEX = new Set(['record', 'enum', 'fixed', 'array', 'map']);

/**
 * The detection rule when no `schema_type` is given. JSON Schema documents are
 * objects or booleans, so a JSON string (a type name) or array (a union) can
 * only be Avro. An object is Avro when its top-level `type` is an Avro complex
 * type (record, enum, fixed, array, map) or an Avro primitive name, unless it
 * declares `$schema`; everything else is JSON Schema. `{"type": "string"}` is
 * valid in both languages and counts as Avro: send `schema_type: "JSON"` to
 * say otherwise.
 */
export function detectSchemaType(parsed: unknown): SchemaType {
  if (typeof parsed === 'string' || Array.isArray(parsed)) return 'AVRO';
  if (parsed && typeof parsed === 'object' && !('$schema' in parsed)) {
    const type = (parsed as { type?: unknown }).type;
    if (typeof type === 'string' && (AVRO_COMPLEX.has(type) || AVRO_PRIMITIVES.has(type))) return 'AVRO';
  }
  return 'JSON';
}

function checkAvro(parsed: unknown): void {
  try {
    // Named types (record, enum, fixed) must have names, as the Avro specification says.
    avro.Type.forSchema(parsed as avro.Schema, { noAnonymousTypes: true });
  } catch (err) {
    throw new DefinitionError(`Invalid Avro schema: ${oneLine(err)}`);
  }
}

// Unknown keywords and formats are tolerated (registries hold schemas written
// for other tools); structure, types of keywords and references are checked.
const ajvOptions = { strict: false, logger: false as const, allErrors: true, validateFormats: true };

const DRAFTS: Record<string, () => Ajv | Ajv2019 | Ajv2020> = {
  'https://json-schema.org/draft/2020-12/schema': () => new Ajv2020(ajvOptions),
  'https://json-schema.org/draft/2019-09/schema': () => new Ajv2019(ajvOptions),
  'http://json-schema.org/draft-07/schema': () => new Ajv(ajvOptions),
};

function ajvFor(schema: unknown): Ajv | Ajv2019 | Ajv2020 {
  const declared =
    schema && typeof schema === 'object' ? (schema as { $schema?: unknown }).$schema : undefined;
  if (declared === undefined) return addFormats(new Ajv2020(ajvOptions));
  const key = typeof declared === 'string' ? declared.replace(/#$/, '') : '';
  const make = DRAFTS[key];
  if (!make) {
    throw new DefinitionError(
      `Invalid JSON Schema: unsupported $schema ${JSON.stringify(declared)}; ` +
        `supported: draft 2020-12 (the default), 2019-09 and draft-07`,
    );
  }
  return addFormats(make());
}

function describeAjv(errors: ErrorObject[] | null | undefined): string {
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    seen.add(`${e.instancePath ? `at ${JSON.stringify(e.instancePath)}: ` : ''}${e.message ?? 'invalid'}`);
  }
  const list = [...seen];
  return list.slice(0, 5).join('; ') + (list.length > 5 ? ` (and ${list.length - 5} more)` : '');
}

function checkJsonSchema(parsed: unknown): void {
  const ajv = ajvFor(parsed);
  if (!ajv.validateSchema(parsed as AnySchema)) {
    throw new DefinitionError(`Invalid JSON Schema: ${describeAjv(ajv.errors)}`);
  }
  try {
    // Compiling resolves `$ref`s: only references inside the document resolve.
    ajv.compile(parsed as AnySchema);
  } catch (err) {
    throw new DefinitionError(`Invalid JSON Schema: ${oneLine(err)}`);
  }
}

/** Parses and validates a definition; throws DefinitionError with a message naming the problem. */
export function parseDefinition(text: string, given?: SchemaType): ParsedDefinition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new DefinitionError(`The schema is not valid JSON: ${oneLine(err)}`);
  }
  const schemaType = given ?? detectSchemaType(parsed);
  if (schemaType === 'AVRO') checkAvro(parsed);
  else checkJsonSchema(parsed);
  const fingerprint = createHash('sha256').update(canonicalJson(parsed)).digest('hex');
  return { schemaType, fingerprint };
}
