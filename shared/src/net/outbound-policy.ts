import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { embeddedIpv4 } from './embedded-ipv4.js';

// The outbound-address policy (SSRF defence) of every connection Sluice opens
// to an address a user typed: the gateway's pre-flight checks, previews,
// backfills and warehouse calls, and the workers' sources and targets (with
// their own deny list: dataplane/src/outbound.ts). A user who may store
// a hostname must not be able to make the service call its own cloud's
// metadata endpoint (169.254.169.254), the cluster's internal services or
// loopback. docs/security.md describes both policies for operators.
//
// The check is on the RESOLVED address, at connect time: `lookup` is handed to
// the socket, so the address that was checked is the address connected to (a
// DNS answer that changes between a check and the connection — rebinding —
// cannot slip through). IP literals skip DNS in node:net, so `assertHost`
// checks them before a request is made. Kafka clients dial brokers through
// both (dataplane/src/systems/kafka/broker-policy.ts).

/**
 * Denied by default: "this" network, private (RFC 1918), carrier-grade NAT,
 * loopback, link-local (cloud metadata), IETF-reserved, benchmarking,
 * multicast and reserved IPv4; unspecified, loopback, unique-local (incl.
 * AWS's fd00:ec2::254), link-local and multicast IPv6. An IPv6 address that
 * carries an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo:
 * embedded-ipv4.ts) is also judged by that IPv4 address, under any list.
 */
export const DEFAULT_DENIED_CIDRS: readonly string[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/128',
  '::1/128',
  'fc00::/7',
  'fe80::/10',
  'ff00::/8',
];

export interface OutboundPolicyOptions {
  /** CIDRs no connection may reach; default `DEFAULT_DENIED_CIDRS`. */
  deny?: readonly string[];
  /**
   * CIDRs allowed even inside a denied range: an explicit override (a
   * private-link endpoint at 10.x, or 127.0.0.1/32 for a local test server).
   */
  allow?: readonly string[];
}

/** A connection the policy refused; the message names the address, never a credential. */
export class OutboundAddressDeniedError extends Error {
  override readonly name = 'OutboundAddressDeniedError';
  readonly code = 'EADDRDENIED';
  constructor(
    readonly host: string,
    readonly address: string,
    /** The denied IPv4 address `address` carries, when that is why it is denied. */
    readonly embedded?: string,
  ) {
    const what = embedded ? `${address} (which carries ${embedded})` : address;
    super(
      host === address
        ? `Connections to ${what} are not allowed (private, loopback or link-local address)`
        : `${host} resolves to ${what}: connections to private, loopback or link-local addresses are not allowed`,
    );
  }
}

function parseCidr(cidr: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } {
  const [address = '', bits] = cidr.trim().split('/');
  const version = isIP(address);
  if (version === 0) throw new Error(`"${cidr}" is not a CIDR (address/prefix)`);
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) {
    throw new Error(`"${cidr}" has an invalid prefix length`);
  }
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

function blockList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const { address, prefix, family } = parseCidr(cidr);
    list.addSubnet(address, prefix, family);
  }
  return list;
}

/** A comma- or space-separated CIDR list (environment variables); throws on a malformed entry. */
export function parseCidrList(raw: string): string[] {
  const list = raw
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  for (const cidr of list) parseCidr(cidr);
  return list;
}

export class OutboundPolicy {
  private readonly denied: BlockList;
  private readonly allowed: BlockList;
  readonly deny: readonly string[];
  readonly allow: readonly string[];

  constructor(options: OutboundPolicyOptions = {}) {
    this.deny = options.deny ?? DEFAULT_DENIED_CIDRS;
    this.allow = options.allow ?? [];
    this.denied = blockList(this.deny);
    this.allowed = blockList(this.allow);
  }

  /** Whether a connection to this IP address may be opened. */
  isAllowed(address: string): boolean {
    return this.refusal(address) === null;
  }

  /**
   * Why a connection to this IP address may not be opened: `undefined` for
   * the address itself (or not an IP address), the IPv4 address it carries
   * when that one is denied; null when it is allowed. An allow entry
   * matching the address itself wins over everything.
   */
  private refusal(address: string): string | undefined | null {
    const version = isIP(address);
    if (version === 0) return undefined;
    const family = version === 4 ? 'ipv4' : 'ipv6';
    if (this.allowed.check(address, family)) return null;
    if (this.denied.check(address, family)) return undefined;
    if (version === 6) {
      const carried = embeddedIpv4(address).find((v4) => !this.isAllowed(v4));
      if (carried !== undefined) return carried;
    }
    return null;
  }

  /** The refusal of a connection to `address` (resolved from `host`), or null when it is allowed. */
  deniedError(host: string, address: string): OutboundAddressDeniedError | null {
    const why = this.refusal(address);
    return why === null ? null : new OutboundAddressDeniedError(host, address, why);
  }

  /** Throws OutboundAddressDeniedError for a denied IP literal; names are checked by `lookup`. */
  assertHost(host: string): void {
    const bare = host.replace(/^\[(.*)\]$/, '$1');
    if (isIP(bare) === 0) return;
    const denied = this.deniedError(bare, bare);
    if (denied) throw denied;
  }

  /**
   * A `lookup` for `net.connect` / `https.request`: resolves every address of
   * the name and refuses the name when any of them is denied (a name that
   * mixes public and internal addresses is not one to trust).
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 4);
      const denied = addresses.map((a) => this.deniedError(hostname, a.address)).find(Boolean);
      if (denied) return callback(denied, '', 4);
      if (addresses.length === 0) {
        const e = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
        return callback(e, '', 4);
      }
      if ((options as { all?: boolean }).all) {
        (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      } else {
        const first = addresses[0] as LookupAddress;
        callback(null, first.address, first.family);
      }
    });
  };
}
