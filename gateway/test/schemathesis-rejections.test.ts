import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';
import { excuses, locs, REJECTIONS, names, type Rejection, type Witness } from './schemathesis-rejections.js';
import { seed, systems, type Seeded } from './schemathesis-seed.js';

// Every entry of the Schemathesis test's REJECTIONS is needed: each of its
// witnesses is a request the served OpenAPI document accepts (checked with
// ajv against the operation's parameters and body schema, so the document
// does not state the rule) and the server rejects with the entry's status
// and details (so the rule still exists), and that no other entry excuses.
// The fuzzer's run is random; these requests are not. No Schemathesis process
// is needed: the gateway runs in-process, seeded as for the fuzzer's run (its
// connectors point at the fixtures' hosts: nothing here connects to them).

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

// The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12; formats are checked, as
// Schemathesis generates them.
const strict = addFormats(new Ajv2020({ strict: false, allErrors: true }));
const coercing = addFormats(new Ajv2020({ strict: false, allErrors: true, coerceTypes: true }));

/** A witness's request as sent. */
interface WitnessSent {
  params: Record<string, string>;
  query: Record<string, string>;
  body?: unknown;
  as?: TestUser;
}

type Operation = {
  parameters?: { name: string; in: string; required?: boolean; schema: object }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: object }> };
};

/** The first 60 characters of an entry's reason: how failures name it. */
const entryName = (e: Rejection) => `"${e.reason.slice(0, 60)}…"`;

/** Why `witness` does not satisfy the document (an empty list: it does). */
function documentIssues(doc: Record<string, unknown>, witness: Witness, request: WitnessSent): string[] {
  const [method, path] = witness.operation.split(' ') as [string, string];
  const op = (doc.paths as Record<string, Record<string, Operation>>)[path]?.[method.toLowerCase()];
  if (!op) return [`the document has no operation ${witness.operation}`];
  const issues: string[] = [];
  // Each schema with the document's components beside it, so that its `#/components/…` references resolve.
  const check = (ajv: Ajv2020, schema: object, value: unknown, where: string) => {
    const validate = ajv.compile({ ...schema, components: doc.components });
    if (!validate(value)) issues.push(`${where}: ${ajv.errorsText(validate.errors)}`);
  };
  const given: Record<string, Record<string, string>> = { path: request.params, query: request.query };
  for (const p of op.parameters ?? []) {
    const value = given[p.in]?.[p.name];
    if (value === undefined) {
      if (p.required) issues.push(`${p.in} parameter ${p.name} is required`);
      continue;
    }
    // Path segments and query strings are text: coerced as a client library (and the server) reads them.
    check(coercing, p.schema, value, `${p.in} parameter ${p.name}`);
  }
  for (const where of ['path', 'query'])
    for (const name of Object.keys(given[where]!))
      if (!(op.parameters ?? []).some((p) => p.in === where && p.name === name))
        issues.push(`the document has no ${where} parameter ${name}`);
  const body = op.requestBody?.content['application/json'];
  if (request.body === undefined) {
    if (op.requestBody?.required) issues.push('the body is required');
  } else if (!body) {
    issues.push('the operation takes no JSON body');
  } else {
    check(strict, body.schema, request.body, 'body');
  }
  return issues;
}

const cases = REJECTIONS.flatMap((entry) =>
  entry.witnesses.map((witness) => [`${witness.operation} for ${entryName(entry)}`, entry, witness] as const),
);

it('gives every operation of every REJECTIONS entry a witness, of that entry', () => {
  const missing = REJECTIONS.flatMap((entry) =>
    entry.operations
      .filter((op) => !entry.witnesses.some((w) => names(op, w.operation)))
      .map((op) => `${entryName(entry)}: ${op} has no witness`),
  );
  const stray = REJECTIONS.flatMap((entry) =>
    entry.witnesses
      .filter((w) => w.operation.endsWith('*') || !entry.operations.some((op) => names(op, w.operation)))
      .map((w) => `${entryName(entry)}: a witness of ${w.operation}, which the entry does not list`),
  );
  expect([...missing, ...stray]).toEqual([]);
});

describe.each(databaseKinds())('the REJECTIONS of the Schemathesis test, each needed (%s)', (kind) => {
  let gw: TestGateway;
  let admin: TestUser;
  let seeded: Seeded;
  let doc: Record<string, unknown>;

  beforeAll(async () => {
    gw = await startTestGateway(kind);
    admin = await gw.superuser();
    seeded = await seed(gw, admin, await systems('fuzz-orders', false));
    doc = (await gw.http.get('/api/openapi.json')).body as Record<string, unknown>;
  });
  afterAll(() => gw?.close());

  it.each(cases)('%s', async (_, entry, witness) => {
    const built = await witness.request({ gw, admin, seeded });
    const sent: WitnessSent = {
      params: built.params ?? {},
      query: built.query ?? {},
      body: built.body,
      as: built.as,
    };
    const invalid = documentIssues(doc, witness, sent);
    if (invalid.length > 0)
      throw new Error(
        `${witness.operation} of ${entryName(entry)}: the witness no longer satisfies the served document ` +
          `(${invalid.join('; ')}). If the document now states the rule, remove ${witness.operation} from the ` +
          'entry (and the entry when it has no operation left); otherwise make the witness valid again.',
      );
    const [method, template] = witness.operation.split(' ') as [string, string];
    const path = template.replace(/\{([A-Za-z_]+)\}/g, (_m, name: string) =>
      encodeURIComponent(sent.params[name]!),
    );
    let req = gw.http[method.toLowerCase() as 'get'](`/api${path}`)
      .set((sent.as ?? admin).auth)
      .query(sent.query);
    if (sent.body !== undefined) req = req.send(sent.body as object);
    const res = await req;
    const answer = `${res.status} ${JSON.stringify(res.body)}`;
    if (!excuses(entry, witness.operation, sent, res.status, res.body))
      throw new Error(
        `${witness.operation} of ${entryName(entry)}: the server answered ${answer.slice(0, 600)}, which the entry ` +
          `does not excuse. If the server no longer rejects such a request this way, remove ${witness.operation} ` +
          'from the entry (and the entry when it has no operation left); otherwise fix the witness.',
      );
    if (entry.locPrefixes && locs(res.body).length === 0)
      throw new Error(
        `${witness.operation} of ${entryName(entry)}: the server answered ${answer.slice(0, 300)}, with no ` +
          'located issue: the entry is only for issues under its locPrefixes.',
      );
    const others = REJECTIONS.filter(
      (e) => e !== entry && excuses(e, witness.operation, sent, res.status, res.body),
    );
    if (others.length > 0)
      throw new Error(
        `${witness.operation} of ${entryName(entry)}: ${answer.slice(0, 300)} is excused by ` +
          `${others.map(entryName).join(', ')} too, so this entry is not needed for it: find a witness only ` +
          `this entry excuses, or remove ${witness.operation} from it.`,
      );
  });
});
