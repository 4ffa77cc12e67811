import { isIPv6 } from 'node:net';

// IPv6 addresses that carry an IPv4 address: a packet sent to one of them
// reaches that IPv4 host through the kernel (mapped, compatible), a NAT64
// gateway, a 6to4 relay or a Teredo relay. The outbound policy judges such an
// address by the IPv4 addresses it carries as well as by itself, so
// `64:ff9b::a9fe:a9fe` is refused wherever 169.254.169.254 is.

/** The 16 bytes of an IPv6 address (zone id ignored), or undefined when it is not one. */
export function ipv6Bytes(address: string): Uint8Array | undefined {
  const bare = address.replace(/%.*$/, '');
  if (!isIPv6(bare)) return undefined;
  const bytes = new Uint8Array(16);
  // A trailing dotted IPv4 (::ffff:1.2.3.4) is two 16-bit groups.
  let text = bare;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

const v4 = (b: Uint8Array, at: readonly number[], xor = 0) => at.map((i) => (b[i] ?? 0) ^ xor).join('.');
const zero = (b: Uint8Array, from: number, to: number) => b.slice(from, to).every((x) => x === 0);
const startsWith = (b: Uint8Array, prefix: readonly number[]) => prefix.every((x, i) => b[i] === x);

/**
 * Where RFC 6052 puts the IPv4 address in a NAT64 prefix of each length
 * (byte 8, bits 64–71, is always skipped).
 */
const RFC6052_POSITIONS: Record<number, readonly number[]> = {
  32: [4, 5, 6, 7],
  40: [5, 6, 7, 9],
  48: [6, 7, 9, 10],
  56: [7, 9, 10, 11],
  64: [9, 10, 11, 12],
  96: [12, 13, 14, 15],
};

/**
 * The IPv4 addresses an IPv6 address embeds or is translated to:
 * - IPv4-mapped `::ffff:0:0/96` and IPv4-translated `::ffff:0:0:0/96`;
 * - IPv4-compatible `::/96` (not `::` and `::1`, which are themselves);
 * - NAT64, the well-known prefix `64:ff9b::/96`, and the local-use
 *   `64:ff9b:1::/48`, whose operator picks the prefix length: every RFC 6052
 *   position a prefix of /48 to /96 allows is returned;
 * - 6to4 `2002::/16` (the relay's IPv4, bits 16–47);
 * - Teredo `2001::/32` (the server, bits 32–63, and the client, the last 32
 *   bits inverted).
 * Any other address: none.
 */
export function embeddedIpv4(address: string): string[] {
  const b = ipv6Bytes(address);
  if (!b) return [];
  const last = RFC6052_POSITIONS[96] as readonly number[];
  if (zero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return [v4(b, last)];
  if (zero(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zero(b, 10, 12)) return [v4(b, last)];
  if (zero(b, 0, 12)) return zero(b, 12, 15) && (b[15] ?? 0) <= 1 ? [] : [v4(b, last)];
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b]) && zero(b, 4, 12)) return [v4(b, last)];
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01])) {
    return [48, 56, 64, 96].map((len) => v4(b, RFC6052_POSITIONS[len] as readonly number[]));
  }
  if (startsWith(b, [0x20, 0x02])) return [v4(b, [2, 3, 4, 5])];
  if (startsWith(b, [0x20, 0x01, 0x00, 0x00])) return [v4(b, [4, 5, 6, 7]), v4(b, last, 0xff)];
  return [];
}
