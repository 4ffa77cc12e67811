// Executes the table of examples in README.md, so the documentation cannot
// drift from the behaviour.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { compileMapper, decryptValue, type MapperRule } from './index.js';

const readme = readFileSync(new URL('./README.md', import.meta.url), 'utf8');
const section = readme.split('<!-- examples:start -->')[1]?.split('<!-- examples:end -->')[0] ?? '';

/** Cells of a table line, split on pipes that are not escaped, with `\|` restored. */
const cells = (line: string): string[] =>
  line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim().replace(/\\\|/g, '|'));

const code = (cell: string): unknown => JSON.parse(cell.replace(/^`|`$/g, ''));

const examples = section
  .split('\n')
  .filter((l) => l.startsWith('|'))
  .slice(2) // header and delimiter
  .map((line) => {
    const [title = '', config, message, rows] = cells(line);
    return {
      title,
      config: code(config ?? '') as MapperRule[],
      message: code(message ?? ''),
      rows: code(rows ?? ''),
    };
  });

const ENCRYPTED = /^<encrypted:(.*)>$/s;

describe('README examples', () => {
  it('has a table of examples to run', () => {
    expect(examples.length).toBeGreaterThanOrEqual(30);
  });

  it.each(examples.map((e) => [e.title, e] as [string, (typeof examples)[number]]))('%s', (_, example) => {
    const rows = compileMapper(example.config).apply(example.message);
    const expected = example.rows as Record<string, unknown>[];
    // Encrypted cells differ on every run: decrypt them and compare the plaintext.
    const comparable = rows.map((row, i) =>
      Object.fromEntries(
        Object.entries(row).map(([key, value]) => {
          const want = expected[i]?.[key];
          const plaintext = typeof want === 'string' ? ENCRYPTED.exec(want)?.[1] : undefined;
          if (plaintext === undefined || typeof value !== 'string') return [key, value];
          const passphrase = example.config.find((r) => r.key === key)?.encrypt_key ?? '';
          return [key, `<encrypted:${decryptValue(value, passphrase)}>`];
        }),
      ),
    );
    expect(comparable).toEqual(expected);
  });
});
