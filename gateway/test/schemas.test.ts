import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

const user = (fields: { name: string; type: unknown }[], name = 'User') =>
  JSON.stringify({ type: 'record', name, namespace: 'com.example', fields });

describe.each(databaseKinds())('schema registry on %s', (kind) => {
  let gw: TestGateway;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    alice = await gw.user();
    bob = await gw.user();
  });
  afterAll(() => gw.close());

  const register = (subject: string, body: unknown, who: TestUser = alice) =>
    gw.http
      .post(`/api/schemas/${subject}`)
      .set(who.auth)
      .send(body as object);

  it('refuses anonymous callers on every route', async () => {
    for (const res of [
      await gw.http.post('/api/schemas/anon').send({ schema: '"string"' }),
      await gw.http.get('/api/schemas/'),
      await gw.http.get('/api/schemas/anon/versions'),
      await gw.http.get('/api/schemas/anon/versions/latest'),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Unauthorized' });
    }
  });

  it('registers an Avro record, recognises it again, and versions a change', async () => {
    const v1 = user([
      { name: 'id', type: 'long' },
      { name: 'email', type: 'string' },
    ]);
    const first = await register('users-value', { schema: v1 });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ id: expect.any(String), version: 1 });

    // Same definition: other whitespace, other key order, another user (subjects are global).
    const reordered = `{
      "fields": [ {"type": "long", "name": "id"}, {"type": "string", "name": "email"} ],
      "namespace": "com.example",   "name": "User", "type": "record" }`;
    const again = await register('users-value', { schema: reordered }, bob);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);

    const v2 = user([
      { name: 'id', type: 'long' },
      { name: 'email', type: 'string' },
      { name: 'name', type: ['null', 'string'] },
    ]);
    const changed = await register('users-value', { schema: v2 });
    expect(changed.status).toBe(201);
    expect(changed.body.version).toBe(2);
    expect(changed.body.id).not.toBe(first.body.id);
    // The first definition is still version 1.
    expect((await register('users-value', { schema: v1 })).body).toEqual(first.body);

    // The same definition under another subject is that subject's version 1.
    const other = await register('users-key', { schema: v1 });
    expect(other.status).toBe(201);
    expect(other.body.version).toBe(1);
    expect(other.body.id).not.toBe(first.body.id);
  });

  it('registers JSON Schemas, detected or declared', async () => {
    const order = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { id: { type: 'integer' }, placed: { type: 'string', format: 'date-time' } },
      required: ['id'],
    };
    const res = await register('orders-value', { schema: JSON.stringify(order) });
    expect(res.status).toBe(201);
    expect(res.body.version).toBe(1);
    const read = await gw.http.get('/api/schemas/orders-value/versions/1').set(alice.auth);
    expect(read.body.schema_type).toBe('JSON');

    const draft7 = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      additionalProperties: false,
    };
    expect((await register('draft7', { schema: JSON.stringify(draft7) })).status).toBe(201);

    // {"type": "string"} reads as Avro unless declared otherwise.
    const detected = await register('plain-string', { schema: '{"type":"string"}' });
    expect(detected.status).toBe(201);
    const declared = await register('plain-string', { schema: '{"type":"string"}', schema_type: 'JSON' });
    expect(declared.status).toBe(201);
    expect(declared.body.version).toBe(2);
    const versions = await gw.http.get('/api/schemas/plain-string/versions').set(alice.auth);
    expect(versions.body.map((v: { schema_type: string }) => v.schema_type)).toEqual(['AVRO', 'JSON']);
  });

  it('refuses a definition that does not parse or validate, saying why', async () => {
    const cases: [unknown, RegExp][] = [
      [{ schema: '{"type": "record", "name": "A", "fields": [' }, /not valid JSON/],
      [{ schema: user([{ name: 'id', type: 'lnog' }]) }, /Invalid Avro schema: .*lnog/],
      [{ schema: user([{ name: 'n', type: 'int', default: 'x' } as never]) }, /Invalid Avro schema/],
      [{ schema: '{"type": "record", "fields": []}' }, /Invalid Avro schema/],
      [{ schema: '{"type": "objekt", "properties": {}}' }, /Invalid JSON Schema: .*type/],
      [{ schema: '{"type": "object", "required": "id"}' }, /Invalid JSON Schema: .*required/],
      [{ schema: '{"$ref": "#/$defs/missing"}' }, /Invalid JSON Schema: .*reference/],
      [
        { schema: '{"type": "record", "name": "A", "fields": []}', schema_type: 'JSON' },
        /Invalid JSON Schema/,
      ],
      [{ schema: '{"type": "object"}', schema_type: 'AVRO' }, /Invalid Avro schema/],
      [{ schema: 'id,email\n1,a@b.c' }, /not valid JSON/],
    ];
    for (const [body, msg] of cases) {
      const res = await register('broken', body);
      expect(res.status).toBe(422);
      expect(res.body.detail).toHaveLength(1);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'schema'], type: 'value_error' });
      expect(res.body.detail[0].msg).toMatch(msg);
      expect(res.body.detail[0].msg).not.toMatch(/\n|\bat .*\.js:\d+/);
    }
    // Nothing was stored.
    expect((await gw.http.get('/api/schemas/broken/versions').set(alice.auth)).status).toBe(404);

    const missing = await register('broken', {});
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].loc).toEqual(['body', 'schema']);
    const badType = await register('broken', { schema: '"string"', schema_type: 'PROTOBUF' });
    expect(badType.status).toBe(422);
    expect(badType.body.detail[0].loc).toEqual(['body', 'schema_type']);
  });

  it('refuses malformed subjects', async () => {
    for (const subject of ['bad%20subject', 'a%2Fb', 'caf%C3%A9', 'x'.repeat(256)]) {
      const res = await register(subject, { schema: '"string"' });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['path', 'subject']);
    }
    const long = await register('x'.repeat(255), { schema: '"string"' });
    expect(long.status).toBe(201);
    const dotted = await register('com.example_Orders-v1', { schema: '"string"' });
    expect(dotted.status).toBe(201);
  });

  it('reads subjects, versions and one version', async () => {
    const a = await register('read-me', { schema: user([{ name: 'a', type: 'int' }], 'R') });
    const b = await register('read-me', { schema: user([{ name: 'b', type: 'int' }], 'R') });
    expect([a.status, b.status]).toEqual([201, 201]);

    const versions = await gw.http.get('/api/schemas/read-me/versions').set(bob.auth);
    expect(versions.status).toBe(200);
    expect(versions.body).toEqual([
      { id: a.body.id, version: 1, schema_type: 'AVRO', created_at: expect.any(String) },
      { id: b.body.id, version: 2, schema_type: 'AVRO', created_at: expect.any(String) },
    ]);

    const one = await gw.http.get('/api/schemas/read-me/versions/1').set(bob.auth);
    expect(one.status).toBe(200);
    expect(one.body).toEqual({
      id: a.body.id,
      subject: 'read-me',
      version: 1,
      schema_type: 'AVRO',
      schema: user([{ name: 'a', type: 'int' }], 'R'),
      created_at: expect.any(String),
    });
    const latest = await gw.http.get('/api/schemas/read-me/versions/latest').set(bob.auth);
    expect(latest.body).toMatchObject({ id: b.body.id, version: 2 });

    const page = await gw.http.get('/api/schemas/').query({ size: 100 }).set(bob.auth);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ page: 1, size: 100 });
    const subjects = page.body.items.map((s: { subject: string }) => s.subject);
    expect(subjects).toEqual([...subjects].sort((x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0)));
    expect(page.body.total).toBe(subjects.length);
    expect(page.body.items.find((s: { subject: string }) => s.subject === 'read-me')).toEqual({
      subject: 'read-me',
      latest_version: 2,
      latest_id: b.body.id,
      schema_type: 'AVRO',
      updated_at: expect.any(String),
    });
    const small = await gw.http.get('/api/schemas/').query({ page: 2, size: 1 }).set(bob.auth);
    expect(small.body).toMatchObject({ page: 2, size: 1, total: page.body.total });
    expect(small.body.items).toEqual([page.body.items[1]]);
    expect((await gw.http.get('/api/schemas/').query({ size: 101 }).set(bob.auth)).status).toBe(422);
  });

  it('answers 404 for unknown subjects and versions', async () => {
    await register('known', { schema: '"int"' });
    const cases = [
      ['/api/schemas/unknown/versions', 'Subject not found'],
      ['/api/schemas/unknown/versions/1', 'Subject not found'],
      ['/api/schemas/unknown/versions/latest', 'Subject not found'],
      ['/api/schemas/known/versions/2', 'Version not found'],
    ];
    for (const [path, detail] of cases) {
      const res = await gw.http.get(path as string).set(alice.auth);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail });
    }
    for (const version of ['0', '-1', 'newest', '1.5']) {
      const res = await gw.http.get(`/api/schemas/known/versions/${version}`).set(alice.auth);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['path', 'version']);
    }
  });

  it('numbers concurrent registrations of one subject 1..n without gaps or duplicates', async () => {
    const defs = Array.from({ length: 10 }, (_, i) => user([{ name: `f${i}`, type: 'int' }], 'Race'));
    const results = await Promise.all(defs.map((schema) => register('race', { schema })));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
    const versions = results.map((r) => r.body.version as number).sort((x, y) => x - y);
    expect(versions).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(10);
    const listed = await gw.http.get('/api/schemas/race/versions').set(alice.auth);
    expect(listed.body.map((v: { version: number }) => v.version)).toEqual(versions);
  });

  it('registers one definition sent concurrently exactly once', async () => {
    const schema = user([{ name: 'same', type: 'string' }], 'Same');
    const results = await Promise.all(Array.from({ length: 6 }, () => register('same-race', { schema })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(new Set(results.map((r) => JSON.stringify(r.body)))).toEqual(
      new Set([JSON.stringify({ id: results[0]!.body.id, version: 1 })]),
    );
  });

  it('documents the routes with both success codes of registration', () => {
    const paths = gw.openapi.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    expect(Object.keys(paths['/schemas/{subject}']!.post!.responses)).toEqual(
      expect.arrayContaining(['200', '201', '401', '422']),
    );
    expect(paths['/schemas/{subject}/versions/{version}']!.get).toBeDefined();
  });
});
