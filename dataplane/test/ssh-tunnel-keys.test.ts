import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { OutboundPolicy } from '@sluice/shared/net';
import { describeWithPostgres, testPostgresUrl } from '@sluice/testing/postgres';
import { startBastion, type Bastion, type KeyFormat, type KeyType } from '@sluice/testing/sshd';
import { checkPostgres } from '../src/index.js';

// The private keys a user may give the tunnel, each logging in to a real
// OpenSSH bastion and reaching PostgreSQL behind it: Ed25519, ECDSA and RSA,
// in OpenSSH's format, in PEM (PKCS#1 for RSA, SEC1 for ECDSA, PKCS#8 for
// Ed25519, which ssh-keygen does not write as PEM) and in PKCS#8, each plain
// and encrypted with a passphrase. And what a user reads when the passphrase is missing or
// wrong.

const opts = { policy: new OutboundPolicy({ allow: ['127.0.0.0/8'] }), timeoutMs: 10_000 };
const PASSPHRASE = 'correct horse battery';

describeWithPostgres('SSH private keys of the tunnel', () => {
  let bastion: Bastion;
  const config = (key: string, passphrase?: string) => {
    const url = new URL(testPostgresUrl() as string);
    return {
      host: url.hostname,
      port: Number(url.port || 5432),
      database: url.pathname.slice(1) || 'postgres',
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      ssl_mode: 'disable',
      ...bastion.tunnelFields(),
      ssh_private_key: key,
      ...(passphrase ? { ssh_private_key_passphrase: passphrase } : {}),
    };
  };
  const failure = (work: Promise<unknown>) =>
    work.then(
      () => 'the check succeeded',
      (e: unknown) => (e as Error).message,
    );

  beforeAll(async () => {
    bastion = await startBastion();
  });
  afterAll(async () => {
    await bastion?.close();
  });

  const matrix: [KeyType, KeyFormat, boolean][] = [];
  for (const type of ['ed25519', 'ecdsa', 'rsa'] as const)
    for (const format of ['openssh', 'pem', 'pkcs8'] as const)
      for (const encrypted of [false, true]) matrix.push([type, format, encrypted]);

  it.each(matrix)('logs in with a %s key in %s encoding (encrypted: %s)', async (type, format, encrypted) => {
    const key = bastion.newUserKey(type, format, encrypted ? { passphrase: PASSPHRASE } : {});
    const text = Buffer.from(key.privateKeyBase64, 'base64').toString();
    // The file is what was asked for.
    expect(text).toMatch(
      format === 'openssh'
        ? /^-----BEGIN OPENSSH PRIVATE KEY-----/
        : format === 'pkcs8' || type === 'ed25519'
          ? /^-----BEGIN (ENCRYPTED )?PRIVATE KEY-----/
          : /^-----BEGIN (RSA|EC) PRIVATE KEY-----/,
    );
    const checked = await checkPostgres(
      config(key.privateKeyBase64, encrypted ? PASSPHRASE : undefined),
      opts,
      'target',
    );
    expect(checked.server_version).toMatch(/^\d+/);
  });

  it('takes the key file as it is too (a Secret made from the file)', async () => {
    const key = bastion.newUserKey('ecdsa', 'openssh');
    const text = Buffer.from(key.privateKeyBase64, 'base64').toString();
    await expect(checkPostgres(config(text), opts, 'target')).resolves.toBeDefined();
  });

  it('says when the passphrase is missing or wrong, without either in the message', async () => {
    for (const format of ['openssh', 'pem', 'pkcs8'] as const) {
      const key = bastion.newUserKey('rsa', format, { passphrase: PASSPHRASE });
      expect(await failure(checkPostgres(config(key.privateKeyBase64), opts, 'target'))).toBe(
        'The SSH private key (ssh_private_key) is encrypted: set ssh_private_key_passphrase',
      );
      const wrong = await failure(
        checkPostgres(config(key.privateKeyBase64, 'not the passphrase'), opts, 'target'),
      );
      expect(wrong).toMatch(/^The SSH private key \(ssh_private_key\) could not be (decrypted|read)/);
      expect(wrong).not.toContain('not the passphrase');
      expect(wrong).not.toContain(PASSPHRASE);
    }
    expect(
      await failure(checkPostgres(config(Buffer.from('hello').toString('base64')), opts, 'target')),
    ).toBe(
      'The SSH private key (ssh_private_key) is not a base64-encoded private key file (no "-----BEGIN … PRIVATE KEY-----" line)',
    );
  });
});
