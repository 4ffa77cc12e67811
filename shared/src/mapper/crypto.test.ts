import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  compileMapper,
  decryptValue,
  isEncryptedValue,
  MapperDecryptError,
  mapperCryptoStats,
  PBKDF2_ITERATIONS,
} from './index.js';

const encryptingRule = (passphrase: string) =>
  compileMapper([{ key: 'e', path: 'v', encrypt_method: 'aes-256-gcm', encrypt_key: passphrase }]);
const encrypt = (mapper: ReturnType<typeof compileMapper>, v: unknown): string =>
  String(mapper.apply({ v })[0]?.e);

describe('encryption', () => {
  const mapper = encryptingRule('correct horse');

  it('writes a self-describing value that decrypts with the passphrase alone', () => {
    const value = encrypt(mapper, 'Ada Lovelace');
    // 12-byte nonce + 12-byte ciphertext + 16-byte tag = 40 bytes, 54 base64url characters.
    expect(value).toMatch(/^enc:v1:[\w-]{22}:[\w-]{54}$/);
    expect(isEncryptedValue(value)).toBe(true);
    expect(decryptValue(value, 'correct horse')).toBe('Ada Lovelace');
  });

  it('uses a modern PBKDF2 iteration count', () => {
    expect(PBKDF2_ITERATIONS).toBeGreaterThanOrEqual(600_000);
  });

  it('gives different outputs for equal inputs', () => {
    expect(encrypt(mapper, 'same')).not.toBe(encrypt(mapper, 'same'));
  });

  it('encrypts the text form of non-strings and leaves null null', () => {
    expect(decryptValue(encrypt(mapper, 42), 'correct horse')).toBe('42');
    expect(decryptValue(encrypt(mapper, { a: 1 }), 'correct horse')).toBe('{"a":1}');
    expect(mapper.apply({ v: null })).toEqual([{ e: null }]);
  });

  it('is the identity through decryption, for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        expect(decryptValue(encrypt(mapper, text), 'correct horse')).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a wrong passphrase and an altered value', () => {
    const value = encrypt(mapper, 'secret');
    expect(() => decryptValue(value, 'wrong')).toThrow(MapperDecryptError);
    expect(() => decryptValue(value, 'wrong')).toThrow('wrong passphrase, or the value was altered');
    // Flip one bit of the ciphertext: the tag no longer matches.
    const [head, data = ''] = [
      value.slice(0, value.lastIndexOf(':') + 1),
      value.slice(value.lastIndexOf(':') + 1),
    ];
    const bytes = Buffer.from(data, 'base64url');
    bytes[14] = (bytes[14] ?? 0) ^ 1;
    expect(() => decryptValue(head + bytes.toString('base64url'), 'correct horse')).toThrow(
      'wrong passphrase, or the value was altered',
    );
    expect(() => decryptValue(value.slice(0, -30), 'correct horse')).toThrow('not an encrypted mapper value');
    expect(() => decryptValue('plain text', 'correct horse')).toThrow('not an encrypted mapper value');
    expect(() => decryptValue(value.replace('enc:v1', 'enc:v2'), 'correct horse')).toThrow(
      MapperDecryptError,
    );
  });

  it('derives the key once per compiled rule set, not per value', () => {
    const before = mapperCryptoStats().keyDerivations;
    const fresh = encryptingRule('another passphrase');
    expect(mapperCryptoStats().keyDerivations).toBe(before); // nothing derived until needed
    const values = Array.from({ length: 200 }, (_, i) => encrypt(fresh, `v${i}`));
    expect(mapperCryptoStats().keyDerivations).toBe(before + 1);
    // Decryption in the same process finds the key by (passphrase, salt).
    values.forEach((v, i) => expect(decryptValue(v, 'another passphrase')).toBe(`v${i}`));
    expect(mapperCryptoStats().keyDerivations).toBe(before + 1);
  });

  it('gives each compiled rule set its own salt', () => {
    const salt = (v: string) => v.split(':')[2];
    expect(salt(encrypt(encryptingRule('p'), 'x'))).not.toBe(salt(encrypt(encryptingRule('p'), 'x')));
  });

  it('can derive keys ahead of time without blocking', async () => {
    const fresh = encryptingRule('prepared');
    await fresh.prepare();
    const after = mapperCryptoStats().keyDerivations;
    expect(decryptValue(encrypt(fresh, 'x'), 'prepared')).toBe('x');
    expect(mapperCryptoStats().keyDerivations).toBe(after);
  });
});
