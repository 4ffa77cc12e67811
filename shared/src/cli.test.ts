import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { runCli, type CliIo } from './cli.js';
import { compileMapper } from './mapper/index.js';

const PASSPHRASE = 'owner passphrase';
const mapper = compileMapper([
  { key: 'id', path: 'id', primary_key: true },
  { key: 'name', path: 'name', encrypt_method: 'aes-256-gcm', encrypt_key: PASSPHRASE },
]);
const encrypted = (name: string): string => String(mapper.apply({ id: 1, name })[0]?.name);

const run = async (
  argv: string[],
  options: { stdin?: string; env?: Record<string, string>; files?: Record<string, string> } = {},
) => {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdin: Readable.from([options.stdin ?? '']),
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: options.env ?? {},
    readFile: async (path) => {
      const text = options.files?.[path];
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
  };
  const status = await runCli(argv, io);
  return { status, stdout, stderr };
};

describe('sluice decrypt', () => {
  it('decrypts what the mapper encrypted, with the passphrase from the environment', async () => {
    const out = await run(
      ['decrypt', '--key-env', 'SLUICE_KEY', encrypted('Ada'), encrypted('Grace Hopper')],
      {
        env: { SLUICE_KEY: PASSPHRASE },
      },
    );
    expect(out).toEqual({ status: 0, stdout: 'Ada\nGrace Hopper\n', stderr: '' });
  });

  it('reads values one per line from stdin and the passphrase from a file', async () => {
    const out = await run(['decrypt', '--key-file', '/secrets/key'], {
      stdin: `${encrypted('a')}\r\n\n${encrypted('ünïcødé ✓')}\n`,
      files: { '/secrets/key': `${PASSPHRASE}\n` },
    });
    expect(out).toEqual({ status: 0, stdout: 'a\n\nünïcødé ✓\n', stderr: '' });
  });

  it('prints JSON strings with --json, so plaintexts with newlines stay on one line', async () => {
    const out = await run(['decrypt', '--json', '--key-env', 'K', encrypted('two\nlines')], {
      env: { K: PASSPHRASE },
    });
    expect(out.stdout).toBe('"two\\nlines"\n');
  });

  it('reports each value it cannot decrypt, keeps going, and exits 1', async () => {
    const out = await run(['decrypt', '--key-env', 'K', 'not-encrypted', encrypted('ok')], {
      env: { K: PASSPHRASE },
    });
    expect(out.status).toBe(1);
    expect(out.stdout).toBe('\nok\n');
    expect(out.stderr).toContain('value 1: not an encrypted mapper value');
  });

  it('fails every value with a wrong passphrase', async () => {
    const out = await run(['decrypt', '--key-env', 'K', encrypted('x')], { env: { K: 'wrong' } });
    expect(out.status).toBe(1);
    expect(out.stderr).toContain('value 1: cannot decrypt: wrong passphrase, or the value was altered');
  });

  it('accepts --key but warns that argv is visible to other users', async () => {
    const out = await run(['decrypt', '--key', PASSPHRASE, encrypted('x')]);
    expect(out.status).toBe(0);
    expect(out.stdout).toBe('x\n');
    expect(out.stderr).toMatch(/^warning: --key puts the passphrase where other users can read it/);
  });

  it.each([
    [['decrypt', 'enc:v1:x'], 'give exactly one of --key-env, --key-file, --key'],
    [['decrypt', '--key-env', 'A', '--key-file', 'f'], 'give exactly one of --key-env, --key-file, --key'],
    [['decrypt', '--key-env', 'MISSING', 'v'], 'environment variable MISSING is not set'],
    [['decrypt', '--key-env'], '--key-env needs a value'],
    [['decrypt', '--key-env', 'K', '--verbose'], 'unknown option --verbose'],
    [['encrypt'], 'unknown command encrypt'],
  ])('refuses %j with usage help', async (argv, message) => {
    const out = await run(argv, { env: { K: PASSPHRASE } });
    expect(out.status).toBe(2);
    expect(out.stderr).toContain(`sluice: ${message}`);
    expect(out.stderr).toContain('Usage: sluice decrypt');
  });

  it('prints usage for help and without a command', async () => {
    expect(await run(['help'])).toMatchObject({
      status: 0,
      stdout: expect.stringContaining('Usage: sluice decrypt'),
    });
    expect(await run([])).toMatchObject({
      status: 2,
      stderr: expect.stringContaining('Usage: sluice decrypt'),
    });
  });

  it('is an executable script (the package bin points at its build)', () => {
    expect(
      readFileSync(new URL('./cli.ts', import.meta.url), 'utf8').startsWith('#!/usr/bin/env node\n'),
    ).toBe(true);
  });
});
