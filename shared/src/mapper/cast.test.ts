import { describe, expect, it } from '@jest/globals';
import { compileMapper, type CastType } from './index.js';

/** The cell, or the error message, of casting one value. */
const cast = (value: unknown, to: CastType, cast_format?: string): unknown => {
  const [row] = compileMapper([{ key: 'v', path: 'v', cast: to, cast_format }]).apply({ v: value });
  return row?.error ?? row?.v;
};

describe('casts', () => {
  it.each<[unknown, CastType, unknown]>([
    [42, 'string', '42'],
    [true, 'string', 'true'],
    [{ a: [1] }, 'string', '{"a":[1]}'],
    [' x ', 'string', ' x '],
    ['42', 'int', 42],
    ['+7', 'int', 7],
    [3.0, 'int', 3],
    ['9007199254740991', 'int', 9007199254740991],
    ['1.5', 'float', 1.5],
    ['1e3', 'float', 1000],
    ['.5', 'float', 0.5],
    [2, 'float', 2],
    ['True', 'bool', true],
    ['no', 'bool', false],
    [' 1 ', 'bool', true],
    [0, 'bool', false],
    ['2024-02-29', 'date', '2024-02-29'],
    ['2024-02-29T23:00:00+05:00', 'date', '2024-02-29'],
    ['2024-02-29', 'datetime', '2024-02-29T00:00:00'],
    ['2024-02-29T23:00Z', 'datetime', '2024-02-29T23:00:00Z'],
    ['2024-02-29t23:00:01,25-03:30', 'datetime', '2024-02-29T23:00:01.250000-03:30'],
    ['07:05', 'time', '07:05:00'],
    ['07:05:09.000001+01', 'time', '07:05:09.000001+01:00'],
  ])('casts %j to %s', (value, to, expected) => {
    expect(cast(value, to)).toBe(expected);
  });

  it.each<[unknown, CastType, string]>([
    ['1.5', 'int', 'v: cannot cast "1.5" to int'],
    [1.5, 'int', 'v: cannot cast 1.5 to int: not a whole number'],
    [
      '9007199254740993',
      'int',
      'v: cannot cast "9007199254740993" to int: outside the exactly representable range ±(2^53-1)',
    ],
    [true, 'int', 'v: cannot cast true to int'],
    ['', 'int', 'v: cannot cast "" to int'],
    ['abc', 'float', 'v: cannot cast "abc" to float'],
    ['Infinity', 'float', 'v: cannot cast "Infinity" to float'],
    ['1e999', 'float', 'v: cannot cast "1e999" to float'],
    ['maybe', 'bool', 'v: cannot cast "maybe" to bool: expected true/false, 1/0 or yes/no'],
    [2, 'bool', 'v: cannot cast 2 to bool: expected true/false, 1/0 or yes/no'],
    ['2023-02-29', 'date', 'v: cannot cast "2023-02-29" to date: day 29 does not exist in 2023-02'],
    ['2024-13-01', 'date', 'v: cannot cast "2024-13-01" to date: month 13 does not exist'],
    [
      '2024-04-31T00:00:00',
      'datetime',
      'v: cannot cast "2024-04-31T00:00:00" to datetime: day 31 does not exist in 2024-04',
    ],
    ['24:00', 'time', 'v: cannot cast "24:00" to time: hour 24 is out of range 0-23'],
    ['23:59:60', 'time', 'v: cannot cast "23:59:60" to time: second 60 is out of range 0-59'],
    ['0000-01-01', 'date', 'v: cannot cast "0000-01-01" to date: year 0 is out of range 1-9999'],
    ['01/02/2024', 'date', 'v: cannot cast "01/02/2024" to date: not an ISO 8601 date'],
    [20240101, 'date', 'v: cannot cast 20240101 to date: expected a string'],
    ['12:00', 'date', 'v: cannot cast "12:00" to date: not an ISO 8601 date'],
  ])('refuses %j as %s', (value, to, error) => {
    expect(cast(value, to)).toBe(error);
  });

  it('keeps a long value short in the error', () => {
    expect(cast('x'.repeat(200), 'int')).toBe(`v: cannot cast "${'x'.repeat(56)}... to int`);
  });
});

describe('strftime cast_format', () => {
  it.each<[string, string, CastType, string]>([
    ['%Y-%m-%d', '2024-3-9', 'date', '2024-03-09'],
    ['%d/%m/%y', '09/03/68', 'date', '2068-03-09'],
    ['%d/%m/%y', '09/03/69', 'date', '1969-03-09'],
    ['%Y%m%d%H%M%S', '20240309101112', 'datetime', '2024-03-09T10:11:12'],
    ['%Y-%m-%dT%H:%M:%S.%f%z', '2024-03-09T10:11:12.5+0530', 'datetime', '2024-03-09T10:11:12.500000+05:30'],
    ['%Y-%m-%d %H:%M %z', '2024-03-09   10:11 Z', 'datetime', '2024-03-09T10:11:00Z'],
    ['%F %T', '2024-03-09 10:11:12', 'datetime', '2024-03-09T10:11:12'],
    ['%Y %j', '2024 060', 'date', '2024-02-29'],
    ['%Y %j', '2023 365', 'date', '2023-12-31'],
    ['%d %b %Y', '9 SEP 2024', 'date', '2024-09-09'],
    ['%B %d, %Y', 'february 29, 2024', 'date', '2024-02-29'],
    ['%A %d %B %Y', 'Friday 01 March 2024', 'date', '2024-03-01'],
    ['%I:%M %p', '12:30 am', 'time', '00:30:00'],
    ['%I:%M %p', '12:30 PM', 'time', '12:30:00'],
    ['%I:%M%p', '01:05pm', 'time', '13:05:00'],
    ['%H:%M', '7:05', 'datetime', '1900-01-01T07:05:00'],
    ['%A %H:%M', 'Monday 10:00', 'time', '10:00:00'],
    ['100%% %Y', '100% 2024', 'date', '2024-01-01'],
  ])('reads %j from %j as %s', (format, value, to, expected) => {
    expect(cast(value, to, format)).toBe(expected);
  });

  it.each<[string, string, CastType, string]>([
    ['%d/%m/%Y', '31/02/2024', 'date', 'day 31 does not exist in 2024-02'],
    ['%d/%m/%Y', '2024-02-01', 'date', 'does not match the format'],
    ['%Y %j', '2023 366', 'date', 'day of year 366 does not exist'],
    ['%Y-%m %j', '2024-03 060', 'date', 'day of year 60 contradicts the month and day'],
    ['%a %Y-%m-%d', 'Tue 2024-03-01', 'date', '2024-03-01 is not a tuesday'],
    ['%I:%M %p', '13:00 PM', 'time', 'hour 13 is out of range 1-12 for %I'],
    ['%H:%M', '25:00', 'time', 'hour 25 is out of range 0-23'],
    ['%Y-%m-%d %z', '2024-01-01 +2500', 'datetime', 'UTC offset must be less than 24 hours'],
  ])('refuses with %j the value %j as %s', (format, value, to, why) => {
    expect(cast(value, to, format)).toBe(`v: cannot cast ${JSON.stringify(value)} to ${to}: ${why}`);
  });
});
