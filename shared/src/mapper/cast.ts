// Casts (spec 2.10, field `cast`). Each cast is compiled once into a function
// that returns the converted value, or a CastFailure; failing is the rare path,
// so only it allocates.
import type { CastType } from './rule.js';
import {
  checkTemporal,
  formatDate,
  formatDatetime,
  formatTime,
  parseIso,
  parseWithFormat,
  type CompiledFormat,
  type Temporal,
} from './temporal.js';
import { preview, toText } from './value.js';

export class CastFailure {
  constructor(readonly msg: string) {}
}

export type CastFn = (value: unknown) => unknown;

const fail = (value: unknown, cast: CastType, why?: string): CastFailure =>
  new CastFailure(`cannot cast ${preview(value)} to ${cast}${why === undefined ? '' : `: ${why}`}`);

const INT = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const BOOLS: Record<string, boolean> = {
  true: true,
  false: false,
  '1': true,
  '0': false,
  yes: true,
  no: false,
};

const castInt: CastFn = (value) => {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && INT.test(value.trim())) n = Number(value.trim());
  else return fail(value, 'int');
  if (!Number.isInteger(n)) return fail(value, 'int', 'not a whole number');
  // Beyond 2^53 a JavaScript number silently changes the digits; refuse rather than corrupt an id.
  if (!Number.isSafeInteger(n))
    return fail(value, 'int', 'outside the exactly representable range ±(2^53-1)');
  return n;
};

const castFloat: CastFn = (value) => {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && FLOAT.test(value.trim())) {
    const n = Number(value.trim());
    if (Number.isFinite(n)) return n;
  }
  return fail(value, 'float');
};

const castBool: CastFn = (value) => {
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value === 'string') {
    const b = BOOLS[value.trim().toLowerCase()];
    if (b !== undefined) return b;
  }
  return fail(value, 'bool', 'expected true/false, 1/0 or yes/no');
};

type Render = (t: Temporal) => string;
const RENDER: Record<'date' | 'datetime' | 'time', Render> = {
  date: formatDate,
  datetime: formatDatetime,
  time: formatTime,
};

const temporalCast = (cast: 'date' | 'datetime' | 'time', format: CompiledFormat | null): CastFn => {
  const render = RENDER[cast];
  return (value) => {
    if (typeof value !== 'string') return fail(value, cast, 'expected a string');
    const text = value.trim();
    if (format !== null) {
      const parsed = parseWithFormat(text, format);
      return typeof parsed === 'string' ? fail(value, cast, parsed) : render(parsed);
    }
    const parsed = parseIso(text, cast === 'time');
    if (parsed === null) return fail(value, cast, 'not an ISO 8601 ' + cast);
    const invalid = checkTemporal(parsed);
    return invalid === null ? render(parsed) : fail(value, cast, invalid);
  };
};

/** `format` is the compiled cast_format, only ever given for temporal casts. */
export const compileCast = (cast: CastType, format: CompiledFormat | null): CastFn => {
  switch (cast) {
    case 'string':
      return toText;
    case 'int':
      return castInt;
    case 'float':
      return castFloat;
    case 'bool':
      return castBool;
    default:
      return temporalCast(cast, format);
  }
};
