import { describe, expect, it } from '@jest/globals';
import { workerOutboundPolicy } from './outbound.js';

// The workers' default outbound policy: the cloud metadata endpoints and the
// addresses that reach the worker's own host are refused in every spelling;
// private networks and loopback, where databases and brokers live, are not.

describe("the workers' outbound policy", () => {
  const policy = workerOutboundPolicy({});

  it.each([
    '169.254.169.254',
    '0.0.0.0',
    '::',
    'fe80::1',
    '::ffff:169.254.169.254',
    '::169.254.169.254',
    '::ffff:0.0.0.0',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::a9fe:a9fe',
    '2002:a9fe:a9fe::1',
    '2001:0:4136:e378:8000:63bf:5601:5601',
  ])('denies %s', (address) => {
    expect(policy.isAllowed(address)).toBe(false);
  });

  it.each(['127.0.0.1', '::1', '10.1.2.3', '192.168.1.10', 'fd00::5', '::ffff:10.1.2.3', '8.8.8.8'])(
    'allows %s',
    (address) => {
      expect(policy.isAllowed(address)).toBe(true);
    },
  );

  it('takes its lists from the environment', () => {
    const p = workerOutboundPolicy({
      SLUICE_WORKER_DENY_CIDRS: '10.0.0.0/8, 169.254.0.0/16',
      SLUICE_WORKER_ALLOW_CIDRS: '10.9.0.0/16',
    });
    expect(p.isAllowed('10.1.2.3')).toBe(false);
    expect(p.isAllowed('64:ff9b::a01:203')).toBe(false);
    expect(p.isAllowed('10.9.1.1')).toBe(true);
    expect(p.isAllowed('::ffff:10.9.1.1')).toBe(true);
    expect(() => workerOutboundPolicy({ SLUICE_WORKER_ALLOW_CIDRS: '10.0.0.0/33' })).toThrow(
      /^SLUICE_WORKER_ALLOW_CIDRS: "10.0.0.0\/33" has an invalid prefix length$/,
    );
  });
});
