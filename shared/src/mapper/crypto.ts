// Column encryption (spec 2.10 rule 12): AES-256-GCM with a random 96-bit
// nonce per value and a key derived from the passphrase with PBKDF2-SHA256.
// The output is one self-describing string,
//   enc:v1:<salt>:<data>   with data = nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)
// (salt and data base64url without padding; nonce and tag have fixed sizes, so
// one encoding of the three does, which saves a third of the encoding cost),
// so that the passphrase alone decrypts it; `v1` fixes the algorithm, PBKDF2
// iteration count and sizes. PBKDF2 is deliberately slow, so the salt is
// chosen once per compiled rule set and its key derived once, then cached by
// (passphrase, salt) for encryption and decryption alike.
import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  pbkdf2,
  pbkdf2Sync,
  randomBytes,
  randomFillSync,
  type KeyObject,
} from 'node:crypto';

export const ENCRYPTED_PREFIX = 'enc:v1:';
/** OWASP's 2023 recommendation for PBKDF2-HMAC-SHA256. */
export const PBKDF2_ITERATIONS = 600_000;
const SALT_BYTES = 16;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const MAX_CACHED_KEYS = 1024;

export class MapperDecryptError extends Error {
  override readonly name = 'MapperDecryptError';
}

const stats = { keyDerivations: 0 };

/** How many PBKDF2 derivations this process has run: lets tests prove the key is derived once. */
export const mapperCryptoStats = (): { keyDerivations: number } => ({ ...stats });

// Insertion-ordered, so the oldest entry is the first to go when it is full.
const keys = new Map<string, KeyObject>();
const cacheId = (passphrase: string, salt: string): string => `${salt}\n${passphrase}`;

const remember = (id: string, key: KeyObject): KeyObject => {
  if (keys.size >= MAX_CACHED_KEYS) keys.delete(keys.keys().next().value as string);
  keys.set(id, key);
  return key;
};

const deriveKey = (passphrase: string, salt: string): KeyObject => {
  const id = cacheId(passphrase, salt);
  const cached = keys.get(id);
  if (cached !== undefined) return cached;
  stats.keyDerivations++;
  const raw = pbkdf2Sync(passphrase, Buffer.from(salt, 'base64url'), PBKDF2_ITERATIONS, KEY_BYTES, 'sha256');
  return remember(id, createSecretKey(raw));
};

const deriveKeyAsync = async (passphrase: string, salt: string): Promise<void> => {
  const id = cacheId(passphrase, salt);
  if (keys.has(id)) return;
  stats.keyDerivations++;
  const raw = await new Promise<Buffer>((resolve, reject) =>
    pbkdf2(passphrase, Buffer.from(salt, 'base64url'), PBKDF2_ITERATIONS, KEY_BYTES, 'sha256', (e, k) =>
      e === null ? resolve(k) : reject(e),
    ),
  );
  remember(id, createSecretKey(raw));
};

// Nonces come from a pooled buffer refilled from the CSPRNG: one system call
// per few hundred values instead of one per value. Each nonce is used at once.
const pool = Buffer.allocUnsafe(NONCE_BYTES * 512);
let poolAt = pool.length;
const nextNonce = (): Buffer => {
  if (poolAt + NONCE_BYTES > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool.subarray(poolAt, (poolAt += NONCE_BYTES));
};

export interface Encryptor {
  encrypt(plaintext: string): string;
  /** Derives the key without blocking the event loop; optional, encrypt derives it otherwise. */
  prepare(): Promise<void>;
}

/** One encryptor per encrypting rule of a compiled rule set: its own salt, one key derivation. */
export const createEncryptor = (passphrase: string): Encryptor => {
  const salt = randomBytes(SALT_BYTES).toString('base64url');
  const prefix = `${ENCRYPTED_PREFIX}${salt}:`;
  let key: KeyObject | undefined;
  return {
    encrypt(plaintext) {
      key ??= deriveKey(passphrase, salt);
      const nonce = nextNonce();
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      // Buffers, not string output encodings: the cipher's string decoder costs more than the AES.
      const ct = cipher.update(plaintext, 'utf8');
      cipher.final();
      return prefix + Buffer.concat([nonce, ct, cipher.getAuthTag()]).toString('base64url');
    },
    async prepare() {
      await deriveKeyAsync(passphrase, salt);
    },
  };
};

const B64URL = /^[A-Za-z0-9_-]+$/;
/** Bytes a base64url text without padding decodes to; null for a length no encoder writes. */
const decodedLength = (b64: string): number | null =>
  b64.length % 4 === 1 ? null : Math.floor((b64.length * 3) / 4);

const partsOf = (value: string): { salt: string; data: string } | null => {
  if (!value.startsWith(ENCRYPTED_PREFIX)) return null;
  const parts = value.slice(ENCRYPTED_PREFIX.length).split(':');
  const [salt = '', data = ''] = parts;
  if (parts.length !== 2 || !B64URL.test(salt) || !B64URL.test(data)) return null;
  if (decodedLength(salt) !== SALT_BYTES) return null;
  const dataBytes = decodedLength(data);
  return dataBytes !== null && dataBytes >= NONCE_BYTES + TAG_BYTES ? { salt, data } : null;
};

/** True when the string has the shape of an encrypted value (it may still fail to decrypt). */
export const isEncryptedValue = (value: string): boolean => partsOf(value) !== null;

/** Decrypts one value written by the mapper. Throws MapperDecryptError on a wrong passphrase or altered value. */
export const decryptValue = (value: string, passphrase: string): string => {
  const parts = partsOf(value);
  if (parts === null) {
    throw new MapperDecryptError(`not an encrypted mapper value (expected ${ENCRYPTED_PREFIX}<salt>:<data>)`);
  }
  const data = Buffer.from(parts.data, 'base64url');
  const nonce = data.subarray(0, NONCE_BYTES);
  const tag = data.subarray(data.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', deriveKey(passphrase, parts.salt), nonce);
  decipher.setAuthTag(tag);
  try {
    return (
      decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES), undefined, 'utf8') +
      decipher.final('utf8')
    );
  } catch {
    throw new MapperDecryptError('cannot decrypt: wrong passphrase, or the value was altered');
  }
};
