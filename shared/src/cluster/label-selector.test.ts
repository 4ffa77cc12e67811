import { describe, expect, it } from '@jest/globals';
import { InvalidError } from './errors.js';
import { matchesLabels, parseLabelSelector } from './label-selector.js';

describe('parseLabelSelector', () => {
  it('parses the equality-based forms, comma-separated', () => {
    expect(parseLabelSelector('a=1, b==2,c!=3,d,!e,sluice.dev/team=core')).toEqual([
      { key: 'a', op: 'equals', value: '1' },
      { key: 'b', op: 'equals', value: '2' },
      { key: 'c', op: 'notEquals', value: '3' },
      { key: 'd', op: 'exists' },
      { key: 'e', op: 'notExists' },
      { key: 'sluice.dev/team', op: 'equals', value: 'core' },
    ]);
    expect(parseLabelSelector(undefined)).toEqual([]);
    expect(parseLabelSelector('  ')).toEqual([]);
    expect(parseLabelSelector('a=')).toEqual([{ key: 'a', op: 'equals', value: '' }]);
  });

  it.each(['a in (b)', 'a notin (b,c)', '!a=b', 'a=b c', 'a,,b', 'bad key=1', 'a=not valid', '=b'])(
    'refuses %j',
    (selector) => {
      expect(() => parseLabelSelector(selector)).toThrow(InvalidError);
    },
  );
});

describe('matchesLabels', () => {
  const labels = { team: 'core', tier: 'gold' };
  it.each([
    ['team=core', true],
    ['team!=core', false],
    ['team!=edge', true],
    ['missing!=x', true],
    ['tier', true],
    ['!tier', false],
    ['team=core,tier=silver', false],
    ['', true],
  ])('%j → %s', (selector, expected) => {
    expect(matchesLabels(parseLabelSelector(selector), labels)).toBe(expected);
  });
});
