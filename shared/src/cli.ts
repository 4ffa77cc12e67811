#!/usr/bin/env node
// `sluice`: the command line of @sluice/shared, for the owner of a mapper
// passphrase. The passphrase is read from an environment variable or a file,
// not from the command line by default, because argv is visible to every user
// of the machine through `ps`.
import { readFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { decryptValue, MapperDecryptError } from './mapper/index.js';

export interface CliIo {
  /** Read when no value is given as an argument: one encrypted value per line. */
  stdin: NodeJS.ReadableStream;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  readFile: (path: string) => Promise<string>;
}

export const CLI_USAGE = `Usage: sluice decrypt (--key-env VAR | --key-file FILE | --key PASSPHRASE) [--json] [VALUE ...]

Decrypts values written by a mapper rule with encrypt_method aes-256-gcm.
Values come from the arguments, or one per line from standard input; each
plaintext is printed on its own line (with --json, as a JSON string, so that
plaintexts holding newlines stay on one line). A value that fails is reported
on standard error with its position, an empty line keeps the output aligned,
and the exit status is 1.

  --key-env VAR    read the passphrase from the environment variable VAR
  --key-file FILE  read the passphrase from FILE (one trailing newline ignored)
  --key PASS       passphrase on the command line: visible to other users in ps
  --json           print each plaintext as a JSON string
`;

interface DecryptOptions {
  keyEnv?: string;
  keyFile?: string;
  key?: string;
  json: boolean;
  values: string[];
}

class UsageError extends Error {}

const parseDecryptArgs = (args: string[]): DecryptOptions => {
  const options: DecryptOptions = { json: false, values: [] };
  const takeValue = (flag: string, i: number): string => {
    const value = args[i + 1];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    return value;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      options.values.push(...args.slice(i + 1));
      break;
    }
    if (arg === '--json') options.json = true;
    else if (arg === '--key-env') options.keyEnv = takeValue(arg, i++);
    else if (arg === '--key-file') options.keyFile = takeValue(arg, i++);
    else if (arg === '--key') options.key = takeValue(arg, i++);
    else if (arg.startsWith('--')) throw new UsageError(`unknown option ${arg}`);
    else options.values.push(arg);
  }
  const sources = [options.keyEnv, options.keyFile, options.key].filter((s) => s !== undefined);
  if (sources.length !== 1) throw new UsageError('give exactly one of --key-env, --key-file, --key');
  return options;
};

const readPassphrase = async (options: DecryptOptions, io: CliIo): Promise<string> => {
  if (options.key !== undefined) {
    io.stderr(
      'warning: --key puts the passphrase where other users can read it (ps); prefer --key-env or --key-file\n',
    );
    return options.key;
  }
  if (options.keyEnv !== undefined) {
    const value = io.env[options.keyEnv];
    if (value === undefined || value === '')
      throw new UsageError(`environment variable ${options.keyEnv} is not set`);
    return value;
  }
  // Files written with echo or an editor end with a newline that is no part of the passphrase.
  const text = await io.readFile(options.keyFile as string);
  return text.replace(/\r?\n$/, '');
};

async function* linesOf(stream: NodeJS.ReadableStream): AsyncGenerator<string> {
  yield* createInterface({ input: stream, crlfDelay: Infinity });
}

const decrypt = async (args: string[], io: CliIo): Promise<number> => {
  const options = parseDecryptArgs(args);
  const passphrase = await readPassphrase(options, io);
  const values: AsyncIterable<string> | string[] =
    options.values.length > 0 ? options.values : linesOf(io.stdin);
  let position = 0;
  let failures = 0;
  for await (const raw of values) {
    position++;
    const value = raw.trim();
    if (value === '') {
      io.stdout('\n');
      continue;
    }
    try {
      const plaintext = decryptValue(value, passphrase);
      io.stdout(`${options.json ? JSON.stringify(plaintext) : plaintext}\n`);
    } catch (e) {
      if (!(e instanceof MapperDecryptError)) throw e;
      failures++;
      io.stderr(`value ${position}: ${e.message}\n`);
      io.stdout('\n');
    }
  }
  return failures === 0 ? 0 : 1;
};

/** Runs the command line; returns the exit status. */
export const runCli = async (argv: string[], io: CliIo): Promise<number> => {
  const [command, ...args] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.stderr : io.stdout)(CLI_USAGE);
    return command === undefined ? 2 : 0;
  }
  try {
    if (command === 'decrypt') return await decrypt(args, io);
    throw new UsageError(`unknown command ${command}`);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr(`sluice: ${e.message}\n\n${CLI_USAGE}`);
    return 2;
  }
};

const invokedAsProgram = (): boolean => {
  try {
    // npm installs the bin as a symbolic link: compare real paths.
    return realpathSync(process.argv[1] ?? '') === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
};

if (invokedAsProgram()) {
  process.exitCode = await runCli(process.argv.slice(2), {
    stdin: process.stdin,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    readFile: (path) => readFile(path, 'utf8'),
  });
}
