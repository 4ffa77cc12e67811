import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { decryptValue } from '@sluice/shared/mapper';
import { startTestGateway, type TestGateway, type TestUser } from './harness.js';

describe('POST /api/smt/process_mapper', () => {
  let gw: TestGateway;
  let user: TestUser;
  beforeAll(async () => {
    gw = await startTestGateway('pglite');
    user = await gw.user();
  });
  afterAll(() => gw.close());

  const call = (body: unknown) =>
    gw.http
      .post('/api/smt/process_mapper')
      .set(user.auth)
      .send(body as object);

  it('turns an order with items into one row per item, for any authenticated user', async () => {
    const res = await call({
      table_name: 'order_items',
      config: [
        { key: 'order_id', path: 'id', cast: 'int', primary_key: true },
        { key: 'sku', path: 'items|*|sku', primary_key: true },
        { key: 'qty', path: 'items|*|qty', cast: 'int' },
        { key: 'source', static: 'shop' },
        { key: 'email_hash', path: 'customer|email', hash_method: 'sha256' },
      ],
      message: {
        id: '42',
        customer: { email: 'a@b.c' },
        items: [
          { sku: 'A', qty: '2' },
          { sku: 'B', qty: 1 },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(2);
    expect(res.body[0]).toMatchObject({ order_id: 42, sku: 'A', qty: 2, source: 'shop' });
    expect(res.body[1]).toMatchObject({ order_id: 42, sku: 'B', qty: 1 });
    expect(res.body[0].email_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('keeps failing rows with an error key instead of an HTTP error', async () => {
    const res = await call({
      table_name: 't',
      config: [
        { key: 'n', path: 'n', cast: 'int' },
        { key: 'must', path: 'missing', nullable: false },
      ],
      message: { n: 'not a number' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(1);
    expect(res.body[0]).toHaveProperty('error');
  });

  it('encrypts so that only the passphrase decrypts', async () => {
    const res = await call({
      table_name: 't',
      config: [{ key: 'ssn', path: 'ssn', encrypt_method: 'aes-256-gcm', encrypt_key: 'pass phrase' }],
      message: { ssn: '123-45-6789' },
    });
    expect(res.status).toBe(200);
    expect(res.body[0].ssn).not.toContain('123-45');
    expect(decryptValue(res.body[0].ssn, 'pass phrase')).toBe('123-45-6789');
  });

  it('answers configuration errors with 422 pointing at the rule', async () => {
    const res = await call({
      table_name: 't',
      config: [
        { key: 'a', path: 'a' },
        { key: 'a', path: 'b' },
        { key: 'c', path: 'c', encrypt_method: 'aes-256-gcm' },
      ],
      message: {},
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: unknown[] }) => d.loc);
    expect(
      locs.every((l: unknown[]) => l[0] === 'body' && l[1] === 'config' && typeof l[2] === 'number'),
    ).toBe(true);
    expect(locs.map((l: unknown[]) => l[2])).toEqual(expect.arrayContaining([1, 2]));
    const badCast = await call({
      table_name: 't',
      config: [{ key: 'a', path: 'a', cast: 'money' }],
      message: {},
    });
    expect(badCast.status).toBe(422);
    expect(badCast.body.detail[0].loc.slice(0, 3)).toEqual(['body', 'config', 0]);
  });

  it('needs a token and a table name', async () => {
    expect((await gw.http.post('/api/smt/process_mapper').send({})).status).toBe(401);
    const res = await call({ config: [], message: {} });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'table_name']);
  });
});
