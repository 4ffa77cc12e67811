// MySQL's binary DECIMAL (decimal2bin): 9 digits per 4 bytes, the leftover
// digits of each side in the fewest bytes, big-endian, the sign in the
// first bit (set for positive numbers) and negative numbers complemented.
// Row values and the DECIMAL values inside binary JSON share it.

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Bytes of the leftover 0–8 digits. */
const SIZES = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/** The bytes DECIMAL(precision, scale) takes. */
export function decimalSize(precision: number, scale: number): number {
  const integral = precision - scale;
  return SIZES[integral % 9]! + Math.floor(integral / 9) * 4 + Math.floor(scale / 9) * 4 + SIZES[scale % 9]!;
}

/** The decimal text of the binary DECIMAL `bytes` (exactly decimalSize bytes), with the scale's digits. */
export function decodeDecimal(bytes: Buffer, precision: number, scale: number): string {
  const integral = precision - scale;
  const intRest = integral % 9;
  const fracRest = scale % 9;
  const buf = Buffer.from(bytes);
  const negative = (buf[0]! & 0x80) === 0;
  buf[0]! ^= 0x80;
  if (negative) for (let i = 0; i < buf.length; i++) buf[i] = ~buf[i]! & 0xff;
  let pos = 0;
  const take = (size: number, digits: number) => {
    const v = size ? buf.readUIntBE(pos, size) : 0;
    pos += size;
    return pad(v, digits);
  };
  let int = take(SIZES[intRest]!, intRest);
  for (let i = 0; i < Math.floor(integral / 9); i++) int += take(4, 9);
  let frac = '';
  for (let i = 0; i < Math.floor(scale / 9); i++) frac += take(4, 9);
  frac += take(SIZES[fracRest]!, fracRest);
  int = int.replace(/^0+(?=\d)/, '') || '0';
  return `${negative ? '-' : ''}${int}${scale > 0 ? '.' + frac : ''}`;
}
