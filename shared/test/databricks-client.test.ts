import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  DatabricksApiError,
  DatabricksClient,
  checkUnityName,
  normalizeHostname,
  runStatement,
  testConnection,
  waitTimeoutFor,
  warehouseIdOf,
} from '@sluice/shared/databricks';
import { OutboundPolicy, OutboundRequestError, type OutboundHttpOptions } from '@sluice/shared/net';
import { DatabricksStandIn } from '@sluice/testing/databricks-stand-in';

const TOKEN = 'dapi-client-test-token-0000';
const WAREHOUSE = 'abc123def4567890';

describe('warehouse settings (spec 2.12)', () => {
  it.each([
    ['adb-1234567890123456.7.azuredatabricks.net', 'adb-1234567890123456.7.azuredatabricks.net'],
    [
      'https://adb-1234567890123456.7.azuredatabricks.net/?o=1234567890123456#job/1',
      'adb-1234567890123456.7.azuredatabricks.net',
    ],
    [
      '  HTTPS://DBC-A1B2C3D4-E5F6.cloud.databricks.com/sql/1.0/warehouses/x ',
      'dbc-a1b2c3d4-e5f6.cloud.databricks.com',
    ],
    ['dbc-a1b2.cloud.databricks.com/some/path', 'dbc-a1b2.cloud.databricks.com'],
    ['https://user:pw@host.example.com:8443/x', 'host.example.com:8443'],
    ['127.0.0.1:4443', '127.0.0.1:4443'],
  ])('reduces %s to the host %s', (raw, host) => {
    expect(normalizeHostname(raw)).toEqual({ ok: true, value: host });
  });

  it.each(['', 'not a host', 'host_with_underscore.com', 'https://', 'a..b', 'host:99999'])(
    'refuses the hostname %j',
    (raw) => {
      expect(normalizeHostname(raw).ok).toBe(false);
    },
  );

  it('takes the warehouse id from a warehouse HTTP path and refuses cluster paths clearly', () => {
    expect(warehouseIdOf('/sql/1.0/warehouses/abc123def4567890')).toEqual({
      ok: true,
      value: 'abc123def4567890',
    });
    expect(warehouseIdOf('/sql/1.0/endpoints/abc123/')).toEqual({ ok: true, value: 'abc123' });
    const cluster = warehouseIdOf('/sql/protocolv1/o/1234567890123456/0123-456789-abcdefgh');
    expect(cluster.ok).toBe(false);
    expect(!cluster.ok && cluster.msg).toMatch(/cluster.*\/sql\/1\.0\/warehouses\//);
    expect(warehouseIdOf('/something/else').ok).toBe(false);
  });

  it('accepts catalog and schema names of letters, digits, underscores and hyphens only', () => {
    expect(checkUnityName('main_2-x', 'catalog').ok).toBe(true);
    for (const bad of ['a.b', 'a b', 'ä', '`x`', '']) expect(checkUnityName(bad, 'schema').ok).toBe(false);
  });

  it('asks for wait_timeout values the API accepts', () => {
    expect(waitTimeoutFor(2000)).toBe('0s');
    expect(waitTimeoutFor(7000)).toBe('7s');
    expect(waitTimeoutFor(120_000)).toBe('10s');
  });
});

describe('the Databricks client against the TLS stand-in', () => {
  let standIn: DatabricksStandIn;
  let http: OutboundHttpOptions;
  const client = (token = TOKEN) => new DatabricksClient({ host: standIn.host, token }, http);

  beforeAll(async () => {
    standIn = await DatabricksStandIn.start({ token: TOKEN });
    http = {
      policy: new OutboundPolicy({ allow: ['127.0.0.1/32'] }),
      timeoutMs: 5000,
      extraCa: [standIn.ca],
    };
  });
  afterAll(() => standIn.close());
  beforeEach(() => standIn.clearLog());

  it('verifies the server certificate: without the CA the connection is refused', async () => {
    const err = await new DatabricksClient({ host: standIn.host, token: TOKEN }, { ...http, extraCa: [] })
      .getWarehouse(WAREHOUSE)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutboundRequestError);
    expect((err as Error).message).toMatch(/self.signed|certificate/i);
    expect(standIn.requests).toEqual([]);
  });

  it('refuses the stand-in without the allow override (loopback is denied)', async () => {
    const err = await new DatabricksClient(
      { host: standIn.host, token: TOKEN },
      { ...http, policy: new OutboundPolicy() },
    )
      .getWarehouse(WAREHOUSE)
      .catch((e: unknown) => e);
    expect((err as OutboundRequestError).kind).toBe('denied');
  });

  it('passes the connection test with exactly the three read-only calls, in order', async () => {
    const verdict = await testConnection(client(), {
      warehouseId: WAREHOUSE,
      catalog: 'main',
      schema: 'sales',
    });
    expect(verdict).toEqual({ ok: true, warehouse: { name: 'Starter Warehouse', state: 'RUNNING' } });
    expect(standIn.calls()).toEqual([
      `GET /api/2.0/sql/warehouses/${WAREHOUSE}`,
      'GET /api/2.1/unity-catalog/catalogs/main',
      'GET /api/2.1/unity-catalog/schemas/main.sales',
    ]);
    expect(standIn.requests.every((r) => r.auth === 'valid' && r.body === undefined)).toBe(true);
  });

  it('reads only what is configured: no catalog, no catalog or schema call', async () => {
    expect((await testConnection(client(), { warehouseId: WAREHOUSE })).ok).toBe(true);
    expect(standIn.calls()).toEqual([`GET /api/2.0/sql/warehouses/${WAREHOUSE}`]);
  });

  it.each([
    [
      'a bad token',
      { token: 'wrong' },
      { warehouseId: WAREHOUSE, catalog: 'main', schema: 'sales' },
      'warehouse',
      /hostname, the access token and the HTTP path.*403 403: Invalid access token\./,
      1,
    ],
    [
      'a missing warehouse',
      {},
      { warehouseId: 'nope000000000000', catalog: 'main', schema: 'sales' },
      'warehouse',
      /404 RESOURCE_DOES_NOT_EXIST: Unable to find warehouse nope000000000000\./,
      1,
    ],
    [
      'a missing catalog',
      {},
      { warehouseId: WAREHOUSE, catalog: 'nothing', schema: 'sales' },
      'catalog',
      /Catalog "nothing" does not exist or cannot be used \(404 CATALOG_DOES_NOT_EXIST: Catalog 'nothing' does not exist\.\)/,
      2,
    ],
    [
      'a missing schema',
      {},
      { warehouseId: WAREHOUSE, catalog: 'main', schema: 'nothing' },
      'schema',
      /Schema "main\.nothing" does not exist or cannot be used \(404 SCHEMA_DOES_NOT_EXIST: Schema 'main\.nothing' does not exist\.\)/,
      3,
    ],
  ] as const)(
    'fails on %s at the right step and stops there',
    async (_l, who, settings, step, message, calls) => {
      const verdict = await testConnection(client('token' in who ? who.token : TOKEN), settings);
      expect(verdict).toMatchObject({ ok: false, step });
      expect(!verdict.ok && verdict.message).toMatch(message);
      expect(standIn.requests).toHaveLength(calls);
    },
  );

  it('maps a 401 for a bad token the same way', async () => {
    const strict = await DatabricksStandIn.start({ token: TOKEN, tokenFailureStatus: 401 });
    try {
      const c = new DatabricksClient({ host: strict.host, token: 'nope' }, http);
      const verdict = await testConnection(c, { warehouseId: WAREHOUSE });
      expect(verdict).toMatchObject({ ok: false, step: 'warehouse', status: 401, errorCode: '401' });
    } finally {
      await strict.close();
    }
  });

  it('reports an unreachable host as a failure of the first step', async () => {
    const c = new DatabricksClient({ host: '127.0.0.1:1', token: TOKEN }, http);
    const verdict = await testConnection(c, { warehouseId: WAREHOUSE, catalog: 'main' });
    expect(verdict).toMatchObject({ ok: false, step: 'warehouse' });
    expect(!verdict.ok && verdict.message).toMatch(/refused the connection/);
  });

  it('runs a statement: submit with wait_timeout, inline JSON_ARRAY rows, the row limit', async () => {
    const out = await runStatement(client(), {
      statement: 'SELECT * FROM range(25)',
      warehouseId: WAREHOUSE,
      catalog: 'main',
      schema: 'sales',
      rowLimit: 10,
      timeoutMs: 30_000,
    });
    expect(out).toMatchObject({
      state: 'SUCCEEDED',
      timedOut: false,
      error: null,
      columns: [{ name: 'id', type: 'BIGINT' }],
      truncated: true,
      totalRowCount: 10,
    });
    expect(out.rows).toHaveLength(10);
    expect(out.rows[9]).toEqual(['9']);
    expect(standIn.requests).toEqual([
      {
        method: 'POST',
        path: '/api/2.0/sql/statements',
        auth: 'valid',
        body: {
          statement: 'SELECT * FROM range(25)',
          warehouse_id: WAREHOUSE,
          catalog: 'main',
          schema: 'sales',
          wait_timeout: '10s',
          on_wait_timeout: 'CONTINUE',
          disposition: 'INLINE',
          format: 'JSON_ARRAY',
          row_limit: 10,
        },
      },
    ]);
  });

  it('polls a statement that outlives the submit call until it ends', async () => {
    const out = await runStatement(
      client(),
      { statement: 'SELECT 1 /* duration_ms=700 */', warehouseId: WAREHOUSE, rowLimit: 5, timeoutMs: 4000 },
      undefined,
      { first: 100, max: 200 },
    );
    expect(out.state).toBe('SUCCEEDED');
    expect(out.rows).toEqual([['1']]);
    const calls = standIn.calls();
    expect(calls[0]).toBe('POST /api/2.0/sql/statements');
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.slice(1).every((c) => c === `GET /api/2.0/sql/statements/${out.statementId}`)).toBe(true);
  });

  it('cancels a statement that does not end before the deadline', async () => {
    const out = await runStatement(
      client(),
      { statement: 'SELECT 1 /* duration_ms=60000 */', warehouseId: WAREHOUSE, rowLimit: 5, timeoutMs: 600 },
      undefined,
      { first: 100, max: 200 },
    );
    expect(out).toMatchObject({ state: 'CANCELED', timedOut: true, rows: [] });
    expect(out.error?.message).toMatch(/did not finish within 0\.6 s and was cancelled/);
    expect(standIn.calls().at(-1)).toBe(`POST /api/2.0/sql/statements/${out.statementId}/cancel`);
    const after = await client().getStatement(out.statementId as string);
    expect(after.status.state).toBe('CANCELED');
  });

  it('returns a failed statement with the engine’s error', async () => {
    const out = await runStatement(client(), {
      statement: 'SELECT * FROM missing_table',
      warehouseId: WAREHOUSE,
      rowLimit: 5,
      timeoutMs: 10_000,
    });
    expect(out).toMatchObject({
      state: 'FAILED',
      rows: [],
      error: { code: 'BAD_REQUEST', sqlState: '42P01' },
    });
    expect(out.error?.message).toMatch(/TABLE_OR_VIEW_NOT_FOUND/);
  });

  it('raises the error body of a refused call, without the token', async () => {
    const err = await client('dapi-secret-in-a-bad-token')
      .getCatalog('main')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabricksApiError);
    expect(err).toMatchObject({ status: 403, errorCode: '403', message: 'Invalid access token.' });
    expect(JSON.stringify(err) + String(err)).not.toContain('dapi-secret');
  });
});
