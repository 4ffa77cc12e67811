import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OutboundPolicy } from '@sluice/shared/net';
import type { SinkRecord } from '../contracts.js';
import { createWebhookSink, WebhookDeliveryError, type WebhookTargetSettings } from './webhook.js';

interface Received {
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP server on 127.0.0.1 that answers from a script of statuses (then 200). */
describe('webhook sink against a real local HTTP server', () => {
  let server: Server;
  let base: string;
  let received: Received[];
  let answers: { status: number; body?: string; headers?: Record<string, string> }[];
  const policy = new OutboundPolicy({ allow: ['127.0.0.1/32'] });
  const signal = () => new AbortController().signal;
  const records: SinkRecord[] = [
    { op: 'upsert', table: 'orders', row: { id: 1, name: 'ada' }, keyColumns: ['id'] },
    { op: 'upsert', table: 'orders', row: { id: 2, name: 'bob' }, keyColumns: ['id'] },
    { op: 'delete', table: 'orders', row: { id: 3 }, keyColumns: ['id'] },
  ];
  const sink = (s: Partial<WebhookTargetSettings>, p = policy) =>
    createWebhookSink({ url: `${base}/hook`, retry_backoff_ms: 10, ...s }, { policy: p, allowHttp: true });

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          method: req.method ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        });
        const answer = answers.shift() ?? { status: 200 };
        res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    received = [];
    answers = [];
  });

  it('delivers rows in batches of batch_size, as a JSON array with op, table, key and row', async () => {
    await sink({ batch_size: 2, method: 'PUT', headers: { 'X-Tenant': 'acme' } }).write(records, signal());
    expect(received.map((r) => r.method)).toEqual(['PUT', 'PUT']);
    expect(received[0]?.headers['content-type']).toBe('application/json');
    expect(received[0]?.headers['x-tenant']).toBe('acme');
    expect(JSON.parse(received[0]?.body ?? '')).toEqual([
      { op: 'upsert', table: 'orders', key: { id: 1 }, row: { id: 1, name: 'ada' } },
      { op: 'upsert', table: 'orders', key: { id: 2 }, row: { id: 2, name: 'bob' } },
    ]);
    expect(JSON.parse(received[1]?.body ?? '')).toEqual([
      { op: 'delete', table: 'orders', key: { id: 3 }, row: { id: 3 } },
    ]);
  });

  it('passes a truncate on as an element of op truncate, in order, once for the copies sent together', async () => {
    const truncate: SinkRecord = { op: 'truncate', table: 'orders', row: {}, keyColumns: ['id'] };
    await sink({ batch_size: 10 }).write(
      [records[0] as SinkRecord, truncate, truncate, records[1] as SinkRecord],
      signal(),
    );
    expect(JSON.parse(received[0]?.body ?? '')).toEqual([
      { op: 'upsert', table: 'orders', key: { id: 1 }, row: { id: 1, name: 'ada' } },
      { op: 'truncate', table: 'orders', key: {}, row: {} },
      { op: 'upsert', table: 'orders', key: { id: 2 }, row: { id: 2, name: 'bob' } },
    ]);
  });

  it('sends one object per request with batch_size 1 (the default)', async () => {
    await sink({}).write(records.slice(0, 1), signal());
    expect(JSON.parse(received[0]?.body ?? '')).toEqual({
      op: 'upsert',
      table: 'orders',
      key: { id: 1 },
      row: { id: 1, name: 'ada' },
    });
  });

  it('retries after a 503 and a 429, resending the same delivery id', async () => {
    answers = [{ status: 503 }, { status: 429, headers: { 'Retry-After': '0' } }];
    await sink({ batch_size: 10 }).write(records, signal());
    expect(received).toHaveLength(3);
    const ids = new Set(received.map((r) => r.headers['x-sluice-delivery']));
    expect(ids.size).toBe(1);
    expect(received[2]?.body).toBe(received[0]?.body);
  });

  it('gives up after max_retries with the last status in the error', async () => {
    answers = [
      { status: 500, body: 'boom' },
      { status: 502 },
      { status: 500, body: 'still broken' },
      { status: 200 },
    ];
    const write = sink({ batch_size: 10, max_retries: 2 }).write(records, signal());
    await expect(write).rejects.toThrow(
      /failed 3 times, giving up: 127\.0\.0\.1:\d+ answered 500: still broken$/,
    );
    expect(received).toHaveLength(3);
  });

  it('fails at once on a 400 with the status and an excerpt of the answer', async () => {
    answers = [{ status: 400, body: `{"error":"field name is required"}\n${'x'.repeat(500)}` }];
    const error = await sink({ batch_size: 10 })
      .write(records, signal())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookDeliveryError);
    expect((error as WebhookDeliveryError).status).toBe(400);
    expect((error as Error).message).toMatch(
      /refused the batch: .* answered 400: \{"error":"field name is required"\} x+…$/,
    );
    expect((error as Error).message.length).toBeLessThan(300);
    expect(received).toHaveLength(1);
  });

  it('sends the configured authentication and a verifiable signature', async () => {
    await sink({ auth_type: 'basic', auth_username: 'u', auth_password: 'p@ss' }).write(
      records.slice(0, 1),
      signal(),
    );
    await sink({ auth_type: 'bearer', bearer_token: 'tok' }).write(records.slice(0, 1), signal());
    await sink({
      auth_type: 'header',
      auth_header_name: 'X-Key',
      auth_header_value: 'k1',
      signing_secret: 's3',
    }).write(records.slice(0, 1), signal());
    expect(received[0]?.headers.authorization).toBe(`Basic ${Buffer.from('u:p@ss').toString('base64')}`);
    expect(received[1]?.headers.authorization).toBe('Bearer tok');
    expect(received[2]?.headers['x-key']).toBe('k1');
    const body = received[2]?.body ?? '';
    expect(received[2]?.headers['x-sluice-signature']).toBe(
      `sha256=${createHmac('sha256', 's3').update(body).digest('hex')}`,
    );
  });

  it('refuses a loopback address outside the allow-list without sending anything', async () => {
    const write = sink({ max_retries: 3 }, new OutboundPolicy()).write(records, signal());
    await expect(write).rejects.toThrow(
      'The webhook cannot be called: Connections to 127.0.0.1 are not allowed',
    );
    expect(received).toHaveLength(0);
  });

  it('retries a refused connection, then gives up naming it', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const write = createWebhookSink(
      { url: `http://127.0.0.1:${port}/`, max_retries: 1, retry_backoff_ms: 10 },
      { policy, allowHttp: true },
    ).write(records, signal());
    await expect(write).rejects.toThrow(/failed 2 times, giving up: 127\.0\.0\.1:\d+ refused the connection/);
  });
});
