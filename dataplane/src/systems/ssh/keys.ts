import { createHash, createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import ssh2 from 'ssh2';
import { SshTunnelError } from './errors.js';

// The SSH user's private key as the configuration holds it (base64 of the
// key file) turned into what ssh2 reads, and the bastion's host key checked
// against `ssh_host_key`. ssh2 reads OpenSSH keys (Ed25519, ECDSA, RSA,
// encrypted or not) and the traditional PEM ones (PKCS#1 RSA, SEC1 EC); a
// PKCS#8 key (`BEGIN PRIVATE KEY`, `BEGIN ENCRYPTED PRIVATE KEY`, what
// `openssl genpkey` and `ssh-keygen -m PKCS8` write) is read by node:crypto
// and handed to ssh2 in a form it reads. No message here ever holds the key
// or its passphrase.

/** The key ssh2 is given: text it parses, with the passphrase it needs. */
export interface UsableKey {
  privateKey: string;
  passphrase?: string;
}

const keyError = (why: string) => new SshTunnelError('key', `The SSH private key (ssh_private_key) ${why}`);

/**
 * Decodes `ssh_private_key` and makes sure ssh2 can sign with it. The key
 * file itself is taken too: a Secret made from the file
 * (`kubectl create secret generic --from-file`) holds it as it is.
 */
export function usablePrivateKey(value: string, passphrase: string | undefined): UsableKey {
  const text = value.includes('-----BEGIN')
    ? value
    : Buffer.from(value.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (!/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(text)) {
    throw keyError('is not a base64-encoded private key file (no "-----BEGIN … PRIVATE KEY-----" line)');
  }
  const parsed = ssh2.utils.parseKey(text, passphrase);
  if (!(parsed instanceof Error)) return { privateKey: text, ...(passphrase ? { passphrase } : {}) };
  // PKCS#8 says ENCRYPTED in its armour, traditional PEM in its Proc-Type header.
  const encrypted = /BEGIN ENCRYPTED PRIVATE KEY|Proc-Type: *4,ENCRYPTED/.test(text);
  if (/no passphrase/i.test(parsed.message) || (encrypted && !passphrase)) {
    throw keyError('is encrypted: set ssh_private_key_passphrase');
  }
  // Not a format ssh2 reads (PKCS#8), or an encrypted PEM key: node:crypto reads those.
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem', ...(passphrase ? { passphrase } : {}) });
  } catch (e) {
    const code = (e as { code?: string }).code ?? '';
    if (/passphrase|decrypt|bad decrypt/i.test(`${code} ${(e as Error).message}`)) {
      throw keyError(
        passphrase
          ? 'could not be decrypted: check ssh_private_key_passphrase'
          : 'is encrypted: set ssh_private_key_passphrase',
      );
    }
    throw keyError('could not be read: use an Ed25519, ECDSA or RSA key in OpenSSH or PEM encoding');
  }
  return { privateKey: reencoded(key) };
}

/** A private key ssh2 reads, from a key node:crypto read (unencrypted: it lives in memory only). */
function reencoded(key: KeyObject): string {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return String(key.export({ type: 'pkcs1', format: 'pem' }));
    case 'ec':
      return String(key.export({ type: 'sec1', format: 'pem' }));
    case 'ed25519':
      return openSshEd25519(key);
    default:
      throw keyError(`is a ${key.asymmetricKeyType ?? 'unknown'} key: use an Ed25519, ECDSA or RSA key`);
  }
}

const sshString = (b: Buffer | string) => {
  const data = typeof b === 'string' ? Buffer.from(b) : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  return Buffer.concat([len, data]);
};
const uint32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/** An unencrypted `openssh-key-v1` file of an Ed25519 key (PROTOCOL.key of OpenSSH). */
function openSshEd25519(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  const seed = Buffer.from(String(jwk.d), 'base64url');
  const pub = Buffer.from(String(jwk.x), 'base64url');
  const publicBlob = Buffer.concat([sshString('ssh-ed25519'), sshString(pub)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([
    check,
    check,
    sshString('ssh-ed25519'),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(''),
  ]);
  const pad = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    uint32(1),
    sshString(publicBlob),
    sshString(secret),
  ]);
  const lines = body.toString('base64').match(/.{1,70}/g) ?? [];
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join('\n')}\n-----END OPENSSH PRIVATE KEY-----\n`;
}

/** `SHA256:…` of a public key blob, as `ssh-keygen -lf` prints it. */
export function fingerprint(publicKeyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(publicKeyBlob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type named in a public key blob (`ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`). */
export function keyType(publicKeyBlob: Buffer): string {
  if (publicKeyBlob.length < 4) return 'unknown';
  const len = publicKeyBlob.readUInt32BE(0);
  return publicKeyBlob.subarray(4, 4 + len).toString('latin1');
}

/** What `ssh_host_key` expects: a fingerprint, and the key type when a whole key was given. */
export interface ExpectedHostKey {
  fingerprint: string;
  type?: string;
}

/** Reads `ssh_host_key` (a public key line, perhaps after a host name, or `SHA256:…`). */
export function expectedHostKey(value: string): ExpectedHostKey {
  const trimmed = value.trim();
  if (trimmed.startsWith('SHA256:')) return { fingerprint: trimmed.replace(/=+$/, '') };
  const words = trimmed.split(/\s+/);
  const at = words.findIndex((w) => /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521))$/.test(w));
  const blob = at >= 0 ? words[at + 1] : undefined;
  if (!blob) {
    throw new SshTunnelError(
      'host-key',
      'The SSH host key (ssh_host_key) is neither a public key line nor a SHA256: fingerprint',
    );
  }
  const key = Buffer.from(blob, 'base64');
  return { fingerprint: fingerprint(key), type: keyType(key) };
}

/** Host key algorithms to offer for a key type, so the bastion presents the key that was configured. */
export function hostKeyAlgorithms(type: string | undefined): string[] | undefined {
  if (!type) return undefined;
  return type === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [type];
}
