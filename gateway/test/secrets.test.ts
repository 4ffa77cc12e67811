import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import {
  MANAGED_SECRET_LABEL,
  SecretNotFoundError,
  SecretNotGrantedError,
  type SecretScope,
} from '@sluice/shared/ports';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

const PLAINTEXT = 'pl41ntext-db-passw0rd-xyz';
const OTHER = 'an0ther-t0ken-value-abc';
/** A superuser's look: any granted secret (the scope of a reference is tested in secret-grants.test.ts). */
const ANY: SecretScope = { teamIds: [], envIds: [], ownSecrets: ['sluice-conn-1'], anyGrant: true };
const ENV = '6f0c2f4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f';

describe.each(databaseKinds())('k8s-secrets on %s', (kind) => {
  let gw: TestGateway;
  let admin: TestUser;
  let alice: TestUser;
  const bodies: unknown[] = [];
  const seen = <T extends { body: unknown; text?: string }>(res: T): T => {
    bodies.push(res.text ?? res.body);
    return res;
  };

  beforeAll(async () => {
    gw = await startTestGateway(kind, { SLUICE_NAMESPACE: 'workers' });
    admin = await gw.superuser();
    alice = await gw.user();
  });
  afterAll(async () => {
    // No response of this suite carried a value.
    const all = JSON.stringify(bodies);
    expect(all).not.toContain(PLAINTEXT);
    expect(all).not.toContain(OTHER);
    await gw.close();
  });

  it('refuses anonymous callers on every route', async () => {
    for (const res of [
      await gw.http.get('/api/k8s-secrets'),
      await gw.http.post('/api/k8s-secrets').send({ name: 'x', data: { a: 'b' } }),
      await gw.http.delete('/api/k8s-secrets/x'),
    ]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Unauthorized' });
    }
  });

  it('lets a superuser create a secret that lists with its keys and never its values', async () => {
    const res = seen(
      await gw.http
        .post('/api/k8s-secrets')
        .set(admin.auth)
        .send({ name: 'orders-db', data: { password: PLAINTEXT, token: OTHER } }),
    );
    expect(res.status).toBe(201);
    // The superuser acts for no team: the new secret is granted to nobody yet.
    expect(res.body).toEqual({
      name: 'orders-db',
      keys: ['password', 'token'],
      managed: false,
      allowed_team_ids: [],
      allowed_env_ids: [],
    });
    // Nobody may use it, so nobody but a superuser sees it.
    const none = seen(await gw.http.get('/api/k8s-secrets').set(alice.auth));
    expect(none.status).toBe(200);
    expect(none.body).toEqual([]);
    await expect(
      gw.ctx.secretStore.resolve('workers', { name: 'orders-db', key: 'password' }, ANY),
    ).rejects.toThrow(SecretNotGrantedError);
    await gw.ctx.secretStore.put(
      'workers',
      'orders-db',
      { password: PLAINTEXT, token: OTHER },
      { annotations: { 'sluice.dev/allowed-envs': ENV } },
    );
    const listed = seen(await gw.http.get('/api/k8s-secrets').set(admin.auth));
    expect(listed.body).toEqual([
      {
        name: 'orders-db',
        keys: ['password', 'token'],
        managed: false,
        allowed_team_ids: [],
        allowed_env_ids: [ENV],
      },
    ]);

    // The value is there for whoever resolves a granted reference (the workers' side).
    await expect(
      gw.ctx.secretStore.resolve('workers', { name: 'orders-db', key: 'password' }, ANY),
    ).resolves.toBe(PLAINTEXT);
  });

  it('keeps only sealed values in the table', async () => {
    const raw = await sql<{ row: string }>`select row_to_json(s)::text as row from secrets s`.execute(
      gw.ctx.db,
    );
    expect(raw.rows).toHaveLength(1);
    const row = raw.rows[0]?.row ?? '';
    expect(row).toContain('orders-db');
    expect(row).toContain('"sb1.');
    expect(row).not.toContain(PLAINTEXT);
    expect(row).not.toContain(OTHER);
    expect(row).not.toContain('password'); // keys are sealed too
  });

  it('replaces a secret whole on a second POST', async () => {
    const res = seen(
      await gw.http
        .post('/api/k8s-secrets')
        .set(admin.auth)
        .send({ name: 'orders-db', data: { password: PLAINTEXT } }),
    );
    expect(res.status).toBe(201);
    expect(res.body.keys).toEqual(['password']);
    // A replace without a grant keeps the secret's grant.
    expect(res.body.allowed_env_ids).toEqual([ENV]);
    await expect(
      gw.ctx.secretStore.resolve('workers', { name: 'orders-db', key: 'token' }, ANY),
    ).rejects.toThrow(SecretNotFoundError);
  });

  it('refuses writes from users who are not superusers', async () => {
    const post = seen(
      await gw.http
        .post('/api/k8s-secrets')
        .set(alice.auth)
        .send({ name: 'mine', data: { k: OTHER } }),
    );
    expect(post.status).toBe(403);
    const del = seen(await gw.http.delete('/api/k8s-secrets/orders-db').set(alice.auth));
    expect(del.status).toBe(403);
    expect(await gw.ctx.secretStore.get('workers', 'mine')).toBeUndefined();
  });

  it('validates the name and the keys', async () => {
    for (const name of ['Bad_Name', '-x', 'a'.repeat(254), '']) {
      const res = seen(
        await gw.http
          .post('/api/k8s-secrets')
          .set(admin.auth)
          .send({ name, data: { k: 'v' } }),
      );
      expect(res.status).toBe(422);
      expect(res.body.detail.map((i: { loc: unknown }) => i.loc)).toContainEqual(['body', 'name']);
    }
    const badKey = seen(
      await gw.http
        .post('/api/k8s-secrets')
        .set(admin.auth)
        .send({ name: 'ok', data: { 'a b': 'v' } }),
    );
    expect(badKey.status).toBe(422);
    expect(badKey.body.detail[0].loc.slice(0, 2)).toEqual(['body', 'data']);
    const empty = seen(await gw.http.post('/api/k8s-secrets').set(admin.auth).send({ name: 'ok', data: {} }));
    expect(empty.status).toBe(422);
  });

  it('shows managed secrets as managed and protects them', async () => {
    await gw.ctx.secretStore.put(
      'workers',
      'sluice-conn-1',
      { password: OTHER },
      { labels: { [MANAGED_SECRET_LABEL]: 'true' } },
    );
    // Another namespace is not the worker namespace.
    await gw.ctx.secretStore.put('elsewhere', 'hidden', { k: OTHER });
    // A managed secret is usable by its object only: a superuser sees it, a user does not.
    const list = seen(await gw.http.get('/api/k8s-secrets').set(admin.auth));
    expect(list.body.map((s: { name: string; managed: boolean }) => [s.name, s.managed])).toEqual([
      ['orders-db', false],
      ['sluice-conn-1', true],
    ]);
    expect(seen(await gw.http.get('/api/k8s-secrets').set(alice.auth)).body).toEqual([]);
    const reserved = seen(
      await gw.http
        .post('/api/k8s-secrets')
        .set(admin.auth)
        .send({ name: 'sluice-conn-1', data: { password: 'x' } }),
    );
    expect(reserved.status).toBe(409);
    const del = seen(await gw.http.delete('/api/k8s-secrets/sluice-conn-1').set(admin.auth));
    expect(del.status).toBe(409);
    await expect(
      gw.ctx.secretStore.resolve('workers', { name: 'sluice-conn-1', key: 'password' }, ANY),
    ).resolves.toBe(OTHER);
  });

  it('deletes a user secret, and 404s an unknown one', async () => {
    const del = seen(await gw.http.delete('/api/k8s-secrets/orders-db').set(admin.auth));
    expect(del.status).toBe(204);
    const again = seen(await gw.http.delete('/api/k8s-secrets/orders-db').set(admin.auth));
    expect(again.status).toBe(404);
    const list = seen(await gw.http.get('/api/k8s-secrets').set(admin.auth));
    expect(list.body.map((s: { name: string }) => s.name)).toEqual(['sluice-conn-1']);
  });

  it('names the missing secret or key, and no value, when a reference does not resolve', async () => {
    const missingKey = gw.ctx.secretStore.resolve(
      'workers',
      { name: 'sluice-conn-1', key: 'api_token' },
      ANY,
    );
    await expect(missingKey).rejects.toThrow(SecretNotFoundError);
    const err = (await missingKey.catch((e: unknown) => e)) as SecretNotFoundError;
    expect(err.message).toContain('api_token');
    expect(err.message).toContain('sluice-conn-1');
    expect(err.message).not.toContain(OTHER);
    expect(err.key).toBe('api_token');

    // A missing secret reads as one not granted: a caller never learns what exists.
    const missingSecret = (await gw.ctx.secretStore
      .resolve('workers', { name: 'nope', key: 'k' }, ANY)
      .catch((e: unknown) => e)) as SecretNotFoundError;
    expect(missingSecret).toBeInstanceOf(SecretNotGrantedError);
    expect(missingSecret.message).toContain('"nope"');
    expect(missingSecret.message).toContain('not granted');
  });
});
