#!/usr/bin/env node
// Turns Kubernetes API descriptions into the JSON Schemas kubeconform validates
// against, so kubeconform never needs GitHub (its default schema source, which
// these machines cannot reach). A Node port of what kubeconform's
// scripts/openapi2jsonschema.py (CRDs) and the openapi2jsonschema behind
// yannh/kubernetes-json-schema (the Kubernetes OpenAPI document) do.
//
//   node openapi2jsonschema.mjs --openapi swagger.json --version v1.37.2 --out DIR
//     The Kubernetes OpenAPI v2 document (k8s.io/kubernetes api/openapi-spec/
//     swagger.json) → DIR/v1.37.2-standalone-strict/ and DIR/v1.37.2-standalone/,
//     kubeconform's own layout: use `kubeconform -schema-location DIR
//     -kubernetes-version 1.37.2 [-strict]`.
//
//   node openapi2jsonschema.mjs --crd a.yaml [--crd b.yaml …] --out DIR
//     CustomResourceDefinitions → DIR/{kind}-{group}-{version}.json (strict):
//     use `kubeconform -schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json'`.
//
// File names follow kubeconform's schema-location template: the lower-cased
// kind, the first label of the API group (none for the core group), the
// version: deployment-apps-v1.json, service-v1.json, role-rbac-v1.json,
// connector-sluice-v1alpha1.json.
//
// The schemas, as upstream's:
// - "standalone": every file is self-contained. Upstream inlines every $ref;
//   here the definitions a kind reaches are bundled under `definitions` in the
//   same file and referenced locally, which is equivalent, keeps files small
//   and survives the recursive definitions (JSONSchemaProps of the CRD kind).
// - "strict": `additionalProperties: false` on every object schema that lists
//   properties (what kubectl's validation did), except objects marked
//   x-kubernetes-preserve-unknown-fields. Unknown fields (a typo such as
//   `readinesProbe`) fail.
// - apiVersion and kind are pinned (enum) to the kind the file is for.
// - int-or-string (format int-or-string, x-kubernetes-int-or-string) accepts a
//   string or an integer; a resource.Quantity a string or a number (`cpu: 1`).
// - CRDs: `nullable: true` accepts null.
// Unlike upstream, optional fields of the Kubernetes kinds do not accept null:
// a chart that renders `key: null` has a template bug, and the API server would
// drop the field silently. The CRD root also refuses unknown top-level fields.
//
// Only js-yaml is needed (for --crd), and only when CRDs are converted.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const DRAFT = 'http://json-schema.org/draft-04/schema#';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';

function parseArgs(argv) {
  const out = { crd: [], openapi: undefined, version: undefined, out: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--openapi') out.openapi = value();
    else if (a === '--version') out.version = value();
    else if (a === '--crd') out.crd.push(value());
    else if (a === '--out') out.out = value();
    else if (!a.startsWith('--') && out.crd.length > 0) out.crd.push(a);
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.out || (!out.openapi && out.crd.length === 0)) {
    throw new Error(
      'usage: openapi2jsonschema.mjs (--openapi swagger.json --version vX.Y.Z | --crd file.yaml…) --out DIR',
    );
  }
  return out;
}

const clone = (v) => JSON.parse(JSON.stringify(v));

/**
 * Calls fn on every schema inside `schema` (itself included), children first,
 * following only the keywords that hold schemas. A property *named*
 * "properties" (JSONSchemaProps has one) is therefore never mistaken for the
 * keyword, a mistake of the Python original.
 */
function visitSchemas(schema, fn) {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const key of ['properties', 'patternProperties', 'definitions']) {
    const map = schema[key];
    if (map && typeof map === 'object') for (const child of Object.values(map)) visitSchemas(child, fn);
  }
  for (const key of ['additionalProperties', 'additionalItems', 'not']) {
    if (schema[key] && typeof schema[key] === 'object') visitSchemas(schema[key], fn);
  }
  if (Array.isArray(schema.items)) schema.items.forEach((s) => visitSchemas(s, fn));
  else if (schema.items && typeof schema.items === 'object') visitSchemas(schema.items, fn);
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    if (Array.isArray(schema[key])) schema[key].forEach((s) => visitSchemas(s, fn));
  }
  fn(schema);
}

/** The common rewrites: int-or-string, nullable, strict objects. */
function normalise(schema, { strict }) {
  visitSchemas(schema, (s) => {
    if (s.format === 'int-or-string' || s['x-kubernetes-int-or-string'] === true) {
      delete s.type;
      delete s.format;
      s.oneOf = [{ type: 'string' }, { type: 'integer' }];
    }
    if (s.nullable === true) {
      if (typeof s.type === 'string') s.type = [s.type, 'null'];
      if (Array.isArray(s.enum) && !s.enum.includes(null)) s.enum = [...s.enum, null];
      delete s.nullable;
    }
    if (
      strict &&
      s.properties &&
      s.additionalProperties === undefined &&
      s['x-kubernetes-preserve-unknown-fields'] !== true
    ) {
      s.additionalProperties = false;
    }
  });
  return schema;
}

/** kubeconform's {{ .ResourceKind }}{{ .KindSuffix }} for a group/version/kind. */
export function schemaFileName(group, version, kind) {
  const suffix = group ? `-${group.split('.')[0]}-${version}` : `-${version}`;
  return `${kind}${suffix}`.toLowerCase() + '.json';
}

function pinKind(schema, group, version, kind) {
  const apiVersion = group ? `${group}/${version}` : version;
  schema.properties ??= {};
  schema.properties.apiVersion = {
    ...(schema.properties.apiVersion ?? { type: 'string' }),
    enum: [apiVersion],
  };
  schema.properties.kind = { ...(schema.properties.kind ?? { type: 'string' }), enum: [kind] };
}

// ---------------------------------------------------------------------------
// The Kubernetes OpenAPI v2 document

function refName(ref) {
  const prefix = '#/definitions/';
  if (!ref.startsWith(prefix)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(prefix.length);
}

/** Names of every definition reachable from `schema` through $ref. */
function reachable(schema, definitions) {
  const seen = new Set();
  const stack = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
    } else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (k === '$ref' && typeof v === 'string') {
          const name = refName(v);
          if (!seen.has(name)) {
            if (!definitions[name]) throw new Error(`dangling $ref ${v}`);
            seen.add(name);
            stack.push(definitions[name]);
          }
        } else if (typeof v === 'object') {
          stack.push(v);
        }
      }
    }
  }
  return [...seen].sort();
}

function kubernetesSchemas(swagger, strict) {
  const definitions = clone(swagger.definitions);
  // A quantity is written as a string or a number (`cpu: 1`, `memory: 1Gi`).
  const q = definitions[QUANTITY];
  if (q)
    definitions[QUANTITY] = { description: q.description, oneOf: [{ type: 'string' }, { type: 'number' }] };
  for (const def of Object.values(definitions)) normalise(def, { strict });

  const files = new Map();
  for (const def of Object.values(definitions)) {
    for (const { group, version, kind } of def['x-kubernetes-group-version-kind'] ?? []) {
      const root = clone(def);
      pinKind(root, group, version, kind);
      if (strict && root.properties && root.additionalProperties === undefined)
        root.additionalProperties = false;
      const bundled = {};
      for (const name of reachable(root, definitions)) bundled[name] = definitions[name];
      const schema = { $schema: DRAFT, ...root };
      if (Object.keys(bundled).length > 0) schema.definitions = bundled;
      files.set(schemaFileName(group, version, kind), schema);
    }
  }
  return files;
}

// ---------------------------------------------------------------------------
// CustomResourceDefinitions

function crdSchemas(documents) {
  const files = new Map();
  const crds = [];
  for (const doc of documents) {
    if (!doc || typeof doc !== 'object') continue;
    if (Array.isArray(doc.items))
      crds.push(...doc.items.filter((d) => d?.kind === 'CustomResourceDefinition'));
    if (doc.kind === 'CustomResourceDefinition') crds.push(doc);
  }
  for (const crd of crds) {
    const { group, names } = crd.spec;
    for (const v of crd.spec.versions ?? []) {
      const source = v.schema?.openAPIV3Schema ?? crd.spec.validation?.openAPIV3Schema;
      if (!source) continue;
      const schema = normalise(clone(source), { strict: true });
      // The API server accepts these at the root of every object whatever the
      // schema lists; anything else at the root is an error.
      schema.properties ??= {};
      schema.properties.metadata ??= { type: 'object' };
      pinKind(schema, group, v.name, names.kind);
      if (schema['x-kubernetes-preserve-unknown-fields'] !== true) schema.additionalProperties = false;
      files.set(schemaFileName(group, v.name, names.kind), { $schema: DRAFT, ...schema });
    }
  }
  return files;
}

function write(dir, files) {
  mkdirSync(dir, { recursive: true });
  for (const [name, schema] of files) writeFileSync(join(dir, name), JSON.stringify(schema, null, 1) + '\n');
  return files.size;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.openapi) {
    const version = args.version;
    if (!version || !/^v\d+\.\d+\.\d+$/.test(version)) throw new Error('--openapi needs --version vX.Y.Z');
    const swagger = JSON.parse(readFileSync(args.openapi, 'utf8'));
    for (const strict of [true, false]) {
      const dir = join(args.out, `${version}-standalone${strict ? '-strict' : ''}`);
      const n = write(dir, kubernetesSchemas(swagger, strict));
      console.error(`openapi2jsonschema: ${n} schemas in ${dir}`);
    }
  }
  if (args.crd.length > 0) {
    const { loadAll } = await import('js-yaml');
    const docs = args.crd.flatMap((file) => loadAll(readFileSync(file, 'utf8')));
    const n = write(args.out, crdSchemas(docs));
    console.error(`openapi2jsonschema: ${n} CRD schemas in ${args.out}`);
  }
}

main().catch((err) => {
  console.error(`openapi2jsonschema: ${err.message}`);
  process.exit(1);
});
