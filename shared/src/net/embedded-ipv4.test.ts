import { describe, expect, it } from '@jest/globals';
import { embeddedIpv4, ipv6Bytes } from './embedded-ipv4.js';
import { OutboundAddressDeniedError, OutboundPolicy } from './outbound-policy.js';

// The IPv6 forms that carry an IPv4 address, and the policies (the gateway's
// default list, and a list as short as the workers') judging them by it.

describe('IPv6 addresses that carry an IPv4 address', () => {
  it('reads the bytes of every spelling of an IPv6 address', () => {
    expect([...(ipv6Bytes('::ffff:1.2.3.4') ?? [])].slice(10)).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    expect([...(ipv6Bytes('::ffff:102:304') ?? [])].slice(10)).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    expect([...(ipv6Bytes('2001:db8::1%eth0') ?? [])]).toEqual([
      0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    ]);
    expect(ipv6Bytes('1.2.3.4')).toBeUndefined();
    expect(ipv6Bytes('example.com')).toBeUndefined();
  });

  it.each([
    ['::ffff:127.0.0.1', ['127.0.0.1'], 'IPv4-mapped'],
    ['::ffff:7f00:1', ['127.0.0.1'], 'IPv4-mapped, in hex'],
    ['::ffff:0:a9fe:a9fe', ['169.254.169.254'], 'IPv4-translated'],
    ['::127.0.0.1', ['127.0.0.1'], 'IPv4-compatible'],
    ['::a9fe:a9fe', ['169.254.169.254'], 'IPv4-compatible, in hex'],
    ['64:ff9b::7f00:1', ['127.0.0.1'], 'NAT64 well-known prefix'],
    ['64:ff9b::169.254.169.254', ['169.254.169.254'], 'NAT64 well-known prefix, dotted'],
    ['2002:7f00:1::', ['127.0.0.1'], '6to4'],
    ['2002:a9fe:a9fe:1::1', ['169.254.169.254'], '6to4 with a subnet and host'],
    // Teredo: server 65.54.227.120, client 127.0.0.1 (stored inverted: 80ff:fffe).
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', ['65.54.227.120', '127.0.0.1'], 'Teredo'],
  ])('%s carries %j (%s)', (address, carried) => {
    expect(embeddedIpv4(address)).toEqual(carried);
  });

  it('reads a local-use NAT64 address (64:ff9b:1::/48) at every position its prefix length allows', () => {
    // 127.0.0.1 under a /96 prefix, and under a /64 prefix (byte 8 skipped).
    expect(embeddedIpv4('64:ff9b:1::7f00:1')).toContain('127.0.0.1');
    expect(embeddedIpv4('64:ff9b:1:0:7f:0:100::')).toContain('127.0.0.1');
    // Under a /48 prefix: bytes 6, 7, 9, 10.
    expect(embeddedIpv4('64:ff9b:1:a9fe:a9:fe00::')).toContain('169.254.169.254');
  });

  it.each(['::', '::1', '2001:db8::1', '2606:4700:4700::1111', 'fe80::1', '64:ff9b:0:0:1::1'])(
    '%s carries none',
    (address) => {
      expect(embeddedIpv4(address)).toEqual([]);
    },
  );
});

describe('the outbound policy on IPv6 forms of IPv4 addresses', () => {
  const gateway = new OutboundPolicy();
  // The workers' default list (dataplane/src/outbound.ts) is this short.
  const worker = new OutboundPolicy({ deny: ['169.254.0.0/16', 'fe80::/10', '0.0.0.0/8', '::/128'] });

  it.each([
    '::127.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:0:127.0.0.1',
    '64:ff9b::7f00:1',
    '64:ff9b::10.0.0.1',
    '64:ff9b:1::7f00:1',
    '2002:7f00:1::',
    '2002:c0a8:101::1',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    '::',
  ])('the gateway denies %s', (address) => {
    expect(gateway.isAllowed(address)).toBe(false);
  });

  it.each([
    '::169.254.169.254',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::a9fe:a9fe',
    '2002:a9fe:a9fe::1',
    // Teredo client 169.254.169.254, stored inverted (5601:5601).
    '2001:0:4136:e378:8000:63bf:5601:5601',
    '::0.0.0.5',
    '::',
  ])('the workers deny %s', (address) => {
    expect(worker.isAllowed(address)).toBe(false);
  });

  it.each(['::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '2606:4700:4700::1111'])(
    'both allow %s, which carries a public address',
    (address) => {
      expect(gateway.isAllowed(address)).toBe(true);
      expect(worker.isAllowed(address)).toBe(true);
    },
  );

  it('lets the workers reach loopback in any form, as they reach 127.0.0.1', () => {
    for (const address of ['::1', '::ffff:127.0.0.1', '64:ff9b::7f00:1']) {
      expect(worker.isAllowed(address)).toBe(true);
    }
  });

  it('applies an allow entry of the IPv4 address to its IPv6 forms', () => {
    const p = new OutboundPolicy({ allow: ['127.0.0.1/32'] });
    expect(p.isAllowed('::127.0.0.1')).toBe(true);
    expect(p.isAllowed('64:ff9b::7f00:1')).toBe(true);
    expect(p.isAllowed('64:ff9b::7f00:2')).toBe(false);
  });

  it('names the IPv4 address in the refusal', () => {
    let error: unknown;
    try {
      gateway.assertHost('[64:ff9b::a9fe:a9fe]');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OutboundAddressDeniedError);
    expect((error as Error).message).toBe(
      'Connections to 64:ff9b::a9fe:a9fe (which carries 169.254.169.254) are not allowed (private, loopback or link-local address)',
    );
  });

  it('refuses the forms through lookup too (a name is resolved, an address literal is returned as is)', async () => {
    const looked = await new Promise<unknown>((resolve) =>
      worker.lookup('64:ff9b::a9fe:a9fe', { all: true }, (err) => resolve(err)),
    );
    expect(looked).toBeInstanceOf(OutboundAddressDeniedError);
  });
});
