import { createServer } from 'node:http';
import { describe, expect, it } from '@jest/globals';
import { OutboundPolicy, parseCidrList, DEFAULT_DENIED_CIDRS } from './outbound-policy.js';
import { OutboundRequestError, requestJson } from './outbound-http.js';

describe('the outbound-address policy', () => {
  const policy = new OutboundPolicy();

  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
  ])('denies %s by default', (address) => {
    expect(policy.isAllowed(address)).toBe(false);
  });

  it.each(['8.8.8.8', '52.1.2.3', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    'allows the public address %s',
    (address) => {
      expect(policy.isAllowed(address)).toBe(true);
    },
  );

  it('lets an allow entry override a denied range, and nothing else', () => {
    const p = new OutboundPolicy({ allow: ['127.0.0.1/32'] });
    expect(p.isAllowed('127.0.0.1')).toBe(true);
    expect(p.isAllowed('127.0.0.2')).toBe(false);
    expect(p.isAllowed('169.254.169.254')).toBe(false);
  });

  it('takes a configured deny list instead of the default', () => {
    const p = new OutboundPolicy({ deny: ['8.8.8.0/24'] });
    expect(p.isAllowed('8.8.8.8')).toBe(false);
    expect(p.isAllowed('10.0.0.1')).toBe(true);
    expect(DEFAULT_DENIED_CIDRS).toContain('169.254.0.0/16');
  });

  it('parses CIDR lists and refuses malformed entries', () => {
    expect(parseCidrList(' 10.0.0.0/8, 127.0.0.1 fd00::/8 ')).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
      'fd00::/8',
    ]);
    expect(() => parseCidrList('10.0.0.0/33')).toThrow(/prefix/);
    expect(() => parseCidrList('example.com/8')).toThrow(/not a CIDR/);
  });

  it('refuses IP literals and names that resolve to denied addresses, before any byte is sent', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const opts = { policy, timeoutMs: 2000, allowHttp: true };
      for (const url of [`http://127.0.0.1:${port}/`, `http://localhost:${port}/`, `http://[::1]:${port}/`]) {
        const err = await requestJson(new URL(url), { method: 'GET' }, opts).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(OutboundRequestError);
        expect((err as OutboundRequestError).kind).toBe('denied');
      }
      expect(hits).toBe(0);
      // The override the tests use reaches the same server.
      const allowed = new OutboundPolicy({ allow: ['127.0.0.1/32'] });
      const res = await requestJson(
        new URL(`http://localhost:${port}/`),
        { method: 'GET' },
        { ...opts, policy: allowed },
      );
      expect(res.status).toBe(200);
      expect(hits).toBe(1);
    } finally {
      server.close();
    }
  });

  it('refuses plain HTTP unless the development setting allows it', async () => {
    const err = await requestJson(
      new URL('http://example.com/'),
      { method: 'GET' },
      { policy, timeoutMs: 1000 },
    ).catch((e: unknown) => e);
    expect((err as OutboundRequestError).kind).toBe('scheme');
  });

  it('gives up after its deadline', async () => {
    const server = createServer(() => undefined); // never answers
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const started = Date.now();
      const err = await requestJson(
        new URL(`http://127.0.0.1:${port}/`),
        { method: 'GET' },
        { policy: new OutboundPolicy({ allow: ['127.0.0.1/32'] }), timeoutMs: 300, allowHttp: true },
      ).catch((e: unknown) => e);
      expect((err as OutboundRequestError).kind).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
