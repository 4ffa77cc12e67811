// MySQL and MariaDB store a spatial value as a 4-byte SRID followed by its
// well-known binary (WKB); change events carry it as well-known text (WKT),
// prefixed `SRID=n;` (EWKT, as PostGIS reads it) when the SRID is not 0.

const NAMES = [
  '',
  'POINT',
  'LINESTRING',
  'POLYGON',
  'MULTIPOINT',
  'MULTILINESTRING',
  'MULTIPOLYGON',
  'GEOMETRYCOLLECTION',
];

const num = (v: number) => String(v);

export function wkbToWkt(value: Buffer): string {
  const srid = value.readUInt32LE(0);
  let pos = 4;
  const geometry = (): string => {
    const le = value.readUInt8(pos) === 1;
    pos += 1;
    const u32 = () => {
      const v = le ? value.readUInt32LE(pos) : value.readUInt32BE(pos);
      pos += 4;
      return v;
    };
    const f64 = () => {
      const v = le ? value.readDoubleLE(pos) : value.readDoubleBE(pos);
      pos += 8;
      return v;
    };
    const point = () => `${num(f64())} ${num(f64())}`;
    const points = () => {
      const n = u32();
      return Array.from({ length: n }, point).join(',');
    };
    const rings = () => {
      const n = u32();
      return Array.from({ length: n }, () => `(${points()})`).join(',');
    };
    const type = u32();
    const name = NAMES[type];
    if (!name) throw new RangeError(`unknown WKB geometry type ${type}`);
    const parts = () => {
      const n = u32();
      return Array.from({ length: n }, geometry);
    };
    switch (type) {
      case 1: {
        const p = point();
        return p === 'NaN NaN' ? 'POINT EMPTY' : `POINT(${p})`;
      }
      case 2:
        return `LINESTRING(${points()})`;
      case 3:
        return `POLYGON(${rings()})`;
      case 4:
        return `MULTIPOINT(${parts()
          .map((p) => p.slice('POINT'.length))
          .join(',')})`;
      case 5:
        return `MULTILINESTRING(${parts()
          .map((p) => p.slice('LINESTRING'.length))
          .join(',')})`;
      case 6:
        return `MULTIPOLYGON(${parts()
          .map((p) => p.slice('POLYGON'.length))
          .join(',')})`;
      default:
        return `GEOMETRYCOLLECTION(${parts().join(',')})`;
    }
  };
  const wkt = geometry();
  return srid === 0 ? wkt : `SRID=${srid};${wkt}`;
}
