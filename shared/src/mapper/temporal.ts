// Parsing of dates, datetimes and times: ISO 8601 (extended calendar form) and
// strftime-style formats compiled once into a regular expression. Every parse
// is checked against the calendar, so 2023-02-29 or 31/04 is an error rather
// than a silent roll-over into the next month as `Date` would do.

export interface Temporal {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  micro: number;
  /** Offset from UTC in minutes; null for a naive (offset-less) value. */
  offset: number | null;
}

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
// Monday first, as ISO weekday numbers go.
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];

const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const MONTH_DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysInMonth = (y: number, m: number): number => (m === 2 && isLeap(y) ? 29 : (MONTH_DAYS[m] ?? 0));

/** ISO weekday index, 0 = Monday. */
const weekday = (y: number, m: number, d: number): number => {
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 onto 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(y, m - 1, d);
  return (date.getUTCDay() + 6) % 7;
};

const pad = (n: number, width: number): string => String(n).padStart(width, '0');
// Every cast writes several two-digit fields: a branch beats padStart there.
const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);

/** Returns a message when the fields do not name a real instant, else null. */
export const checkTemporal = (t: Temporal): string | null => {
  if (t.year < 1 || t.year > 9999) return `year ${t.year} is out of range 1-9999`;
  if (t.month < 1 || t.month > 12) return `month ${t.month} does not exist`;
  if (t.day < 1 || t.day > daysInMonth(t.year, t.month)) {
    return `day ${t.day} does not exist in ${pad(t.year, 4)}-${pad(t.month, 2)}`;
  }
  if (t.hour > 23) return `hour ${t.hour} is out of range 0-23`;
  if (t.minute > 59) return `minute ${t.minute} is out of range 0-59`;
  if (t.second > 59) return `second ${t.second} is out of range 0-59`;
  if (t.offset !== null && Math.abs(t.offset) >= 24 * 60) return 'UTC offset must be less than 24 hours';
  return null;
};

const formatOffset = (offset: number | null): string => {
  if (offset === null) return '';
  if (offset === 0) return 'Z';
  const a = Math.abs(offset);
  return `${offset < 0 ? '-' : '+'}${pad(Math.floor(a / 60), 2)}:${pad(a % 60, 2)}`;
};

export const formatDate = (t: Temporal): string =>
  `${t.year >= 1000 ? t.year : pad(t.year, 4)}-${pad2(t.month)}-${pad2(t.day)}`;
export const formatTime = (t: Temporal): string =>
  `${pad2(t.hour)}:${pad2(t.minute)}:${pad2(t.second)}${t.micro === 0 ? '' : `.${pad(t.micro, 6)}`}${formatOffset(t.offset)}`;
export const formatDatetime = (t: Temporal): string => `${formatDate(t)}T${formatTime(t)}`;

const parseOffset = (text: string | undefined): number | null => {
  if (text === undefined || text === '') return null;
  if (text === 'Z' || text === 'z') return 0;
  const digits = text.slice(1).replace(':', '');
  const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
  return text.startsWith('-') ? -minutes : minutes;
};

/** Fractions beyond microseconds are truncated, not rounded, so 59.9999999 never becomes 60. */
const parseFraction = (text: string | undefined): number =>
  text === undefined || text === '' ? 0 : Number(text.slice(0, 6).padEnd(6, '0'));

const OFFSET = '(Z|z|[+-]\\d{2}(?::?\\d{2})?)';
const TIME = `(\\d{2}):(\\d{2})(?::(\\d{2})(?:[.,](\\d+))?)?\\s*${OFFSET}?`;
const ISO_DATETIME = new RegExp(`^(\\d{4})-(\\d{2})-(\\d{2})(?:[Tt ]${TIME})?$`);
const ISO_TIME = new RegExp(`^${TIME}$`);

const fromTimeGroups = (g: (string | undefined)[], at: number, base: Temporal): Temporal => ({
  ...base,
  hour: Number(g[at] ?? 0),
  minute: Number(g[at + 1] ?? 0),
  second: Number(g[at + 2] ?? 0),
  micro: parseFraction(g[at + 3]),
  offset: parseOffset(g[at + 4]),
});

const EPOCH: Temporal = {
  year: 1900,
  month: 1,
  day: 1,
  hour: 0,
  minute: 0,
  second: 0,
  micro: 0,
  offset: null,
};

/**
 * ISO 8601: `YYYY-MM-DD`, `YYYY-MM-DD[T ]HH:MM[:SS[.f]][Z|±HH[:MM]]`, and for a
 * time also `HH:MM[:SS[.f]][offset]` alone. Returns null when the text has none
 * of these shapes.
 */
export const parseIso = (text: string, allowTimeOnly: boolean): Temporal | null => {
  const m = ISO_DATETIME.exec(text);
  if (m !== null) {
    const date = { ...EPOCH, year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) };
    return m[4] === undefined ? date : fromTimeGroups(m, 4, date);
  }
  if (!allowTimeOnly) return null;
  const t = ISO_TIME.exec(text);
  return t === null ? null : fromTimeGroups(t, 1, EPOCH);
};

// --- strftime ---------------------------------------------------------------

const names = (list: string[], abbreviated: boolean): string =>
  `(${list.map((n) => (abbreviated ? n.slice(0, 3) : n)).join('|')})`;

/** The pattern each directive matches; the letter names the field it fills. */
const DIRECTIVES: Record<string, string> = {
  Y: '(\\d{4})',
  y: '(\\d{2})',
  m: '(\\d{1,2})',
  d: '(\\d{1,2})',
  H: '(\\d{1,2})',
  I: '(\\d{1,2})',
  M: '(\\d{1,2})',
  S: '(\\d{1,2})',
  f: '(\\d{1,6})',
  z: '(Z|z|[+-]\\d{2}:?\\d{2})',
  j: '(\\d{1,3})',
  b: names(MONTHS, true),
  B: names(MONTHS, false),
  a: names(WEEKDAYS, true),
  A: names(WEEKDAYS, false),
  p: '(am|pm)',
};
const SHORTHANDS: Record<string, string> = { F: '%Y-%m-%d', T: '%H:%M:%S' };

export const SUPPORTED_DIRECTIVES = [...Object.keys(DIRECTIVES), ...Object.keys(SHORTHANDS), '%'].map(
  (d) => `%${d}`,
);

export interface CompiledFormat {
  regex: RegExp;
  /** Directive letters, in the order of their capture groups. */
  fields: string[];
  /** Capture group number of each directive present. */
  at: Partial<Record<string, number>>;
}

export type FormatResult = { ok: true; format: CompiledFormat } | { ok: false; msg: string };

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Compiles a strftime format once, at configuration time. */
export const compileFormat = (format: string): FormatResult => {
  const expanded = format.replace(/%([FT])/g, (_, d: string) => SHORTHANDS[d] ?? '');
  const fields: string[] = [];
  let source = '';
  for (let i = 0; i < expanded.length; i++) {
    const c = expanded.charAt(i);
    if (c !== '%') {
      // Whitespace in a format matches any run of whitespace, as in Python's strptime.
      source += /\s/.test(c) ? '\\s+' : escapeRegex(c);
      continue;
    }
    const d = expanded.charAt(++i);
    if (d === '%') {
      source += '%';
      continue;
    }
    const pattern = DIRECTIVES[d];
    if (pattern === undefined) {
      const shown = d === '' ? "a lone '%' at the end" : `unknown directive '%${d}'`;
      return {
        ok: false,
        msg: `Invalid cast_format: ${shown}; supported: ${SUPPORTED_DIRECTIVES.join(' ')}`,
      };
    }
    if (fields.includes(d)) return { ok: false, msg: `Invalid cast_format: '%${d}' appears twice` };
    fields.push(d);
    source += pattern;
  }
  const at = Object.fromEntries(fields.map((d, i) => [d, i + 1]));
  return { ok: true, format: { regex: new RegExp(`^${source}$`, 'i'), fields, at } };
};

const nameIndex = (list: string[], text: string): number => {
  const t = text.toLowerCase();
  return list.findIndex((n) => n === t || n.slice(0, 3) === t);
};

/** Parses with a compiled format; a string is an error message (no match, or not a real date). */
export const parseWithFormat = (text: string, format: CompiledFormat): Temporal | string => {
  const m = format.regex.exec(text);
  if (m === null) return 'does not match the format';
  // Positional groups: named ones make the engine build a groups object per match, twice the cost.
  const at = format.at;
  const get = (d: string): string | undefined => {
    const i = at[d];
    return i === undefined ? undefined : m[i];
  };
  const Y = get('Y');
  const y = get('y');
  const monthNumber = get('m');
  const monthName = get('B');
  const monthAbbr = get('b');
  const D = get('d');
  const j = get('j');
  const t: Temporal = { year: 1900, month: 1, day: 1, hour: 0, minute: 0, second: 0, micro: 0, offset: null };
  if (Y !== undefined) t.year = Number(Y);
  else if (y !== undefined) t.year = Number(y) + (Number(y) < 69 ? 2000 : 1900);
  const name = monthName ?? monthAbbr;
  if (monthNumber !== undefined) t.month = Number(monthNumber);
  else if (name !== undefined) t.month = nameIndex(MONTHS, name) + 1;
  if (D !== undefined) t.day = Number(D);
  if (j !== undefined) {
    const dayOfYear = Number(j);
    if (dayOfYear < 1 || dayOfYear > (isLeap(t.year) ? 366 : 365))
      return `day of year ${dayOfYear} does not exist`;
    let [mm, dd] = [1, dayOfYear];
    while (dd > daysInMonth(t.year, mm)) dd -= daysInMonth(t.year, mm++);
    const monthGiven = monthNumber !== undefined || name !== undefined;
    if ((monthGiven && mm !== t.month) || (D !== undefined && dd !== t.day)) {
      return `day of year ${dayOfYear} contradicts the month and day`;
    }
    t.month = mm;
    t.day = dd;
  }
  const H = get('H');
  const I = get('I');
  const p = get('p');
  const M = get('M');
  const S = get('S');
  const f = get('f');
  const z = get('z');
  if (H !== undefined) t.hour = Number(H);
  if (I !== undefined) {
    const h = Number(I);
    if (h < 1 || h > 12) return `hour ${h} is out of range 1-12 for %I`;
    t.hour = (h % 12) + (p !== undefined && p.toLowerCase() === 'pm' ? 12 : 0);
  }
  if (M !== undefined) t.minute = Number(M);
  if (S !== undefined) t.second = Number(S);
  if (f !== undefined) t.micro = parseFraction(f);
  if (z !== undefined) t.offset = parseOffset(z);
  const invalid = checkTemporal(t);
  if (invalid !== null) return invalid;
  const weekdayName = get('a') ?? get('A');
  if (weekdayName !== undefined && (D !== undefined || j !== undefined)) {
    const named = nameIndex(WEEKDAYS, weekdayName);
    if (named !== weekday(t.year, t.month, t.day)) return `${formatDate(t)} is not a ${WEEKDAYS[named]}`;
  }
  return t;
};
