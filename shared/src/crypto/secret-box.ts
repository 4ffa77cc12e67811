import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Encrypts secrets at rest (broker passwords, connector credentials, warehouse
 * tokens) with AES-256-GCM under the service's master key. The stored form is
 * `sb1.<nonce>.<ciphertext>.<tag>` (base64url): versioned so the key or the
 * algorithm can change later without guessing what an old value is.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(masterKey: string | Buffer) {
    // Any length of master secret works; SHA-256 gives the 32-byte AES key.
    this.#key = createHash('sha256').update(masterKey).digest();
  }

  seal(plaintext: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['sb1', nonce, ct, cipher.getAuthTag()]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  open(sealed: string): string {
    const [version, nonce, ct, tag] = sealed.split('.');
    if (version !== 'sb1' || nonce === undefined || ct === undefined || tag === undefined) {
      throw new Error('Not a sealed secret');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(nonce, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
