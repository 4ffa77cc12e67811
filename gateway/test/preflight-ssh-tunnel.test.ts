import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describeWithPostgres, testPostgresUrl } from '@sluice/testing/postgres';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { createConnector, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import type { TestGateway } from './harness.js';
import { closeChecked, poster, startPreflightGateway } from './preflight-fixtures.js';

// The SSH tunnel as a user meets it through the API: a PostgreSQL source
// behind a real OpenSSH bastion (testing/src/sshd.ts), its key encrypted with
// a passphrase. The key and the passphrase are secrets like the password:
// redacted on every read, resolved from the store by `?connector_id=`, in no
// answer or log. The form lists the tunnel fields; pre-flight answers say
// which hop failed.

const run = randomUUID().slice(0, 8);
const PASSPHRASE = `ssh-passphrase-s3cret-${run}`;
const PG_PASSWORD = `pg-ssh-s3cret-${run}`;
const ROLE = `ssh_preflight_${run}`;

describeWithPostgres('pre-flight checks through an SSH bastion (API)', () => {
  let gw: TestGateway;
  let t: TeamSetup;
  let bastion: Bastion;
  let key: string;
  const post = poster(
    () => gw,
    () => t,
    'postgres-source/',
  );
  const config = (more: Record<string, unknown> = {}): Record<string, unknown> => {
    const url = new URL(testPostgresUrl() as string);
    return {
      host: url.hostname,
      port: Number(url.port || 5432),
      database: url.pathname.slice(1) || 'postgres',
      user: ROLE,
      password: PG_PASSWORD,
      ssl_mode: 'disable',
      whitelist: ['public.t'],
      ...bastion.tunnelFields(),
      ssh_private_key: key,
      ssh_private_key_passphrase: PASSPHRASE,
      ...more,
    };
  };

  const admin = () => new pg.Client({ connectionString: testPostgresUrl() as string });

  beforeAll(async () => {
    const a = admin();
    await a.connect();
    await a.query(`create role ${ROLE} login replication password '${PG_PASSWORD}'`);
    await a.end();
    bastion = await startBastion();
    key = bastion.newUserKey('ecdsa', 'openssh', { passphrase: PASSPHRASE }).privateKeyBase64;
    gw = await startPreflightGateway();
    t = await setupTeam(gw, 'preflight-ssh');
  });
  afterAll(async () => {
    await closeChecked(gw, [PASSPHRASE, key, PG_PASSWORD]);
    await bastion?.close();
    const a = admin();
    await a.connect();
    await a.query(`drop role if exists ${ROLE}`);
    await a.end();
  });

  it('offers the tunnel fields in the form, the key and its passphrase as secrets', async () => {
    const res = await gw.http.get('/api/connector-types/').set(t.owner.auth);
    const pg = (res.body as { type: string; fields: { name: string; secret: boolean }[] }[]).find(
      (c) => c.type === 'POSTGRES_SOURCE',
    );
    const ssh = pg?.fields.filter((f) => f.name.startsWith('ssh_')).map((f) => [f.name, f.secret]);
    expect(ssh).toEqual([
      ['ssh_host', false],
      ['ssh_port', false],
      ['ssh_user', false],
      ['ssh_private_key', true],
      ['ssh_private_key_passphrase', true],
      ['ssh_host_key', false],
    ]);
  });

  it('checks through the tunnel, inline and with the stored secrets of a connector, which reads redact', async () => {
    const inline = await post('check-credentials', config());
    expect(inline.status).toBe(200);
    expect(inline.body).toMatchObject({ ok: true });

    const c = await createConnector(gw, t.owner, t.teamId, `ssh-${run}`, 'POSTGRES_SOURCE', config());
    const read = await gw.http.get(`/api/connectors/${c.id}`).set(t.owner.auth);
    expect(read.body.json_configuration).toMatchObject({
      ssh_private_key: '<redacted>',
      ssh_private_key_passphrase: '<redacted>',
      ssh_host_key: bastion.hostKeys.ed25519.line,
    });
    const stored = await post(
      `check-credentials?connector_id=${c.id}`,
      config({ ssh_private_key: '<redacted>', ssh_private_key_passphrase: '<redacted>' }),
    );
    expect(stored.body).toMatchObject({ ok: true });
    const tables = await post(
      `list-tables?connector_id=${c.id}`,
      config({ ssh_private_key: '<redacted>', ssh_private_key_passphrase: '<redacted>' }),
    );
    expect(tables.status).toBe(200);
  });

  it('answers which hop failed: the passphrase, the host key, the bastion', async () => {
    const wrong = await post('check-credentials', config({ ssh_private_key_passphrase: 'nope-nope' }));
    expect(wrong.body).toEqual({
      ok: false,
      message: expect.stringMatching(
        /^The SSH private key \(ssh_private_key\) could not be (decrypted|read)/,
      ),
    });
    const impostor = await post(
      'check-credentials',
      config({ ssh_host_key: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
    );
    expect(impostor.body).toEqual({
      ok: false,
      message: expect.stringContaining(
        `presented the host key ssh-ed25519 ${bastion.hostKeys.ed25519.fingerprint}, not the expected SHA256:AAAA`,
      ),
    });
    await bastion.stop();
    try {
      const down = await post('check-credentials', config());
      expect(down.body).toEqual({
        ok: false,
        message: expect.stringMatching(
          /^Connection refused by SSH bastion 127\.0\.0\.1:\d+: nothing listens there/,
        ),
      });
    } finally {
      await bastion.start();
    }
  });
});
