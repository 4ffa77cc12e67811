import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

const USER_KEYS = ['active_env_id', 'email', 'id', 'is_active', 'is_superuser', 'is_verified'];
const EXPORT_KEYS = ['env_members', 'envs', 'team_members', 'teams', 'users'];
let seq = 0;
const unique = (tag: string) => `${tag}-${++seq}-${randomUUID().slice(0, 6)}`;
const freshEmail = (tag = 'u') => `${unique(tag)}@example.com`;

type Doc = {
  users: { id: string; email: string; is_active: boolean; is_superuser: boolean; is_verified: boolean }[];
  envs: { id: string; name: string }[];
  teams: { id: string; name: string; description: string | null; env_id: string | null }[];
  env_members: { user_id: string; env_id: string; admin: boolean }[];
  team_members: { user_id: string; team_id: string; admin: boolean }[];
};

/** The document with every array in a canonical order, to compare exports order-insensitively. */
function canonical(doc: Doc): Doc {
  const sorted = <T>(list: T[]) =>
    [...list].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return {
    users: sorted(doc.users),
    envs: sorted(doc.envs),
    teams: sorted(doc.teams),
    env_members: sorted(doc.env_members),
    team_members: sorted(doc.team_members),
  };
}

function expectUnauthorized(res: Response) {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ detail: 'Unauthorized' });
}
function expectForbidden(res: Response) {
  expect(res.status).toBe(403);
  expect(res.body).toEqual({ detail: expect.any(String) });
}
function expectNotFound(res: Response) {
  expect(res.status).toBe(404);
  expect(res.body).toEqual({ detail: expect.any(String) });
}
function expectLocs(res: Response, locs: (string | number)[][]) {
  expect(res.status).toBe(422);
  for (const d of res.body.detail)
    expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
  expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(expect.arrayContaining(locs));
}

/** Small API helpers shared by the suites. */
function helpers(gw: () => TestGateway) {
  return {
    async env(owner: TestUser, name = unique('env'), extra: Record<string, unknown> = {}) {
      const res = await gw()
        .http.post('/api/envs/')
        .set(owner.auth)
        .send({ name, ...extra });
      expect(res.status).toBe(201);
      return res.body as { id: string; name: string };
    },
    async team(owner: TestUser, envId: string, name = unique('team')) {
      const res = await gw().http.post(`/api/teams/?env_id=${envId}`).set(owner.auth).send({ name });
      expect(res.status).toBe(201);
      return res.body as { id: string; name: string; env_id: string };
    },
    async addMembers(owner: TestUser, teamId: string, ids: string[]) {
      const res = await gw()
        .http.post(`/api/teams/${teamId}/members/bulk`)
        .set(owner.auth)
        .send({ members: ids });
      expect(res.status).toBe(204);
    },
    me: (u: TestUser | string) =>
      gw()
        .http.get('/api/users/me')
        .set(typeof u === 'string' ? { Authorization: `Bearer ${u}` } : u.auth),
    login: (username: string, password: string) =>
      gw().http.post('/api/auth/jwt/login').type('form').send({ username, password }),
  };
}

describe.each(databaseKinds())('users on %s', (kind) => {
  let gw: TestGateway;
  let root: TestUser;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  const h = helpers(() => gw);

  beforeAll(async () => {
    gw = await startTestGateway(kind, { SLUICE_LOGIN_MAX_PER_ADDRESS: '10000' });
    root = await gw.superuser();
    alice = await gw.user();
    bob = await gw.user();
    carol = await gw.user();
  });
  afterAll(() => gw.close());

  describe('GET /users', () => {
    it('answers a page envelope; a non-superuser sees only people sharing an environment', async () => {
      const env = await h.env(alice);
      const team = await h.team(alice, env.id);
      await h.addMembers(alice, team.id, [bob.id]);
      const res = await gw.http.get('/api/users').set(alice.auth);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ items: expect.any(Array), total: 2, page: 1, size: 50, pages: 1 });
      for (const u of res.body.items) expect(Object.keys(u).sort()).toEqual(USER_KEYS);
      expect(res.body.items.map((u: { id: string }) => u.id).sort()).toEqual([alice.id, bob.id].sort());
      // Carol shares nothing with anyone: she sees herself only.
      const lonely = await gw.http.get('/api/users').set(carol.auth);
      expect(lonely.status).toBe(200);
      expect(lonely.body).toMatchObject({ total: 1, page: 1, size: 50, pages: 1 });
      expect(lonely.body.items).toEqual([expect.objectContaining({ id: carol.id, email: carol.email })]);
    });

    it('finds by exact e-mail (case-insensitive) only among those the caller may see, nobody by a partial one', async () => {
      // Alice and Bob share an environment (previous test); Carol shares nothing with anyone.
      const self = await gw.http
        .get(`/api/users?email=${encodeURIComponent(alice.email.toUpperCase())}`)
        .set(alice.auth);
      expect(self.status).toBe(200);
      expect(self.body.items).toEqual([(await h.me(alice)).body]);
      const colleague = await gw.http
        .get(`/api/users?email=${encodeURIComponent(bob.email)}`)
        .set(alice.auth);
      expect(colleague.body).toMatchObject({ total: 1, page: 1, size: 50 });
      expect(colleague.body.items).toEqual([
        {
          id: bob.id,
          email: bob.email,
          is_active: true,
          is_superuser: false,
          is_verified: false,
          active_env_id: null,
        },
      ]);
      // A stranger's address finds nothing: no id, no flags, not even that the account exists.
      const stranger = await gw.http
        .get(`/api/users?email=${encodeURIComponent(carol.email.toUpperCase())}`)
        .set(alice.auth);
      expect(stranger.status).toBe(200);
      expect(stranger.body).toMatchObject({ items: [], total: 0 });
      const superuser = await gw.http
        .get(`/api/users?email=${encodeURIComponent(root.email)}`)
        .set(alice.auth);
      expect(superuser.body).toMatchObject({ items: [], total: 0 });
      const none = await gw.http
        .get(`/api/users?email=${encodeURIComponent(`x${bob.email}`)}`)
        .set(alice.auth);
      expect(none.status).toBe(200);
      expect(none.body).toMatchObject({ items: [], total: 0 });
      expectLocs(await gw.http.get('/api/users?email=user').set(alice.auth), [['query', 'email']]);
      // A superuser finds anyone, with every field.
      const byRoot = await gw.http.get(`/api/users?email=${encodeURIComponent(carol.email)}`).set(root.auth);
      expect(byRoot.body.items).toEqual([(await h.me(carol)).body]);
    });

    it("shows a non-superuser other people's is_superuser as false and active_env_id as null", async () => {
      const env = await h.env(bob);
      // A superuser in Bob's environment, whose active environment is set.
      const boss = await gw.superuser();
      const team = await h.team(bob, env.id);
      await h.addMembers(bob, team.id, [boss.id]);
      const real = (await h.me(boss)).body;
      expect(real).toMatchObject({ is_superuser: true, active_env_id: env.id });
      const seen = await gw.http.get('/api/users?size=100').set(bob.auth);
      const listed = seen.body.items.find((u: { id: string }) => u.id === boss.id);
      expect(listed).toEqual({ ...real, is_superuser: false, active_env_id: null });
      const byEmail = await gw.http.get(`/api/users?email=${encodeURIComponent(boss.email)}`).set(bob.auth);
      expect(byEmail.body.items).toEqual([listed]);
      // Bob sees himself in full.
      const me = seen.body.items.find((u: { id: string }) => u.id === bob.id);
      expect(me).toEqual((await h.me(bob)).body);
      expect(me.active_env_id).not.toBeNull();
      // And reading the superuser by id is a 403 (spec 4.2).
      expectForbidden(await gw.http.get(`/api/users/${boss.id}`).set(bob.auth));
    });

    it('shows a superuser everyone, paginated', async () => {
      const all = await gw.http.get('/api/users?size=100').set(root.auth);
      expect(all.status).toBe(200);
      const ids = all.body.items.map((u: { id: string }) => u.id);
      expect(ids).toEqual(expect.arrayContaining([root.id, alice.id, bob.id, carol.id]));
      expect(all.body.total).toBe(ids.length);
      const page2 = await gw.http.get('/api/users?page=2&size=1').set(root.auth);
      expect(page2.status).toBe(200);
      expect(page2.body).toMatchObject({ total: all.body.total, page: 2, size: 1, pages: all.body.total });
      expect(page2.body.items).toEqual([all.body.items[1]]);
      expectLocs(await gw.http.get('/api/users?size=101').set(root.auth), [['query', 'size']]);
      expectLocs(await gw.http.get('/api/users?page=0').set(root.auth), [['query', 'page']]);
      expectUnauthorized(await gw.http.get('/api/users'));
    });
  });

  describe('/users/me', () => {
    it('reads the caller', async () => {
      const res = await h.me(carol);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: carol.id,
        email: carol.email,
        is_active: true,
        is_superuser: false,
        is_verified: false,
        active_env_id: null,
      });
      expectUnauthorized(await gw.http.get('/api/users/me'));
      expectUnauthorized(await gw.http.patch('/api/users/me').send({ email: freshEmail() }));
    });

    it('changes the e-mail address: the new one logs in, the account is unverified again', async () => {
      const u = await gw.user();
      await gw.http.patch(`/api/users/${u.id}`).set(root.auth).send({ is_verified: true });
      const email = freshEmail('renamed');
      const res = await gw.http.patch('/api/users/me').set(u.auth).send({ email });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...(await h.me(u)).body, email, is_verified: false });
      expect((await h.login(email, u.password)).status).toBe(200);
      expect((await h.login(u.email, u.password)).body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
    });

    it('refuses an address that belongs to someone else, whatever its case', async () => {
      const u = await gw.user();
      for (const email of [carol.email, carol.email.toUpperCase()]) {
        const res = await gw.http.patch('/api/users/me').set(u.auth).send({ email });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ detail: 'UPDATE_USER_EMAIL_ALREADY_EXISTS' });
      }
      expect((await h.me(u)).body.email).toBe(u.email);
      // Re-sending one's own address is no conflict.
      const same = await gw.http.patch('/api/users/me').set(u.auth).send({ email: u.email });
      expect(same.status).toBe(200);
    });

    it('refuses a short password with an UPDATE_USER_INVALID_PASSWORD object and accepts a good one', async () => {
      const u = await gw.user();
      const res = await gw.http.patch('/api/users/me').set(u.auth).send({ password: 'Sh0rt!' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        detail: { code: 'UPDATE_USER_INVALID_PASSWORD', reason: expect.stringMatching(/8 characters/) },
      });
      expect((await h.login(u.email, u.password)).status).toBe(200);
      const ok = await gw.http.patch('/api/users/me').set(u.auth).send({ password: 'patched-password-1' });
      expect(ok.status).toBe(200);
      expect(Object.keys(ok.body).sort()).toEqual(USER_KEYS);
      expect(JSON.stringify(ok.body)).not.toContain('patched-password-1');
      expect((await h.login(u.email, 'patched-password-1')).status).toBe(200);
      expect((await h.login(u.email, u.password)).status).toBe(400);
    });

    it('refuses a non-superuser raising is_superuser, is_active or is_verified with 403, changing nothing', async () => {
      const u = await gw.user();
      const before = (await h.me(u)).body;
      const newEmail = freshEmail('sneaky');
      for (const flags of [{ is_superuser: true }, { is_verified: true }]) {
        const res = await gw.http
          .patch('/api/users/me')
          .set(u.auth)
          .send({ ...flags, email: newEmail });
        expectForbidden(res);
        expect((await h.me(u)).body).toEqual(before);
      }
      const byId = await gw.http.patch(`/api/users/${u.id}`).set(u.auth).send({ is_superuser: true });
      expectForbidden(byId);
      expect((await h.me(u)).body).toEqual(before);
      // Deactivating oneself is also a superuser's call.
      expectForbidden(await gw.http.patch('/api/users/me').set(u.auth).send({ is_active: false }));
      expect((await h.me(u)).body).toEqual(before);
      // The e-mail was not taken over by any of the refused requests.
      expect(
        (await gw.http.get(`/api/users?email=${encodeURIComponent(newEmail)}`).set(u.auth)).body.total,
      ).toBe(0);
      // Sending the flags one already has is fine.
      const same = await gw.http
        .patch('/api/users/me')
        .set(u.auth)
        .send({ is_superuser: false, is_active: true, is_verified: false });
      expect(same.status).toBe(200);
      expect(same.body).toEqual(before);
    });

    it('sets active_env_id only to an environment the user is in (422 otherwise)', async () => {
      const u = await gw.user();
      const mine = await h.env(u);
      const theirs = await h.env(carol);
      const res = await gw.http.patch('/api/users/me').set(u.auth).send({ active_env_id: theirs.id });
      expectLocs(res, [['body', 'active_env_id']]);
      expect((await h.me(u)).body.active_env_id).toBe(mine.id);
      const unknown = await gw.http.patch('/api/users/me').set(u.auth).send({ active_env_id: randomUUID() });
      expectLocs(unknown, [['body', 'active_env_id']]);
      const second = await h.env(u);
      const ok = await gw.http.patch('/api/users/me').set(u.auth).send({ active_env_id: second.id });
      expect(ok.status).toBe(200);
      expect(ok.body.active_env_id).toBe(second.id);
      const cleared = await gw.http.patch('/api/users/me').set(u.auth).send({ active_env_id: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body.active_env_id).toBeNull();
      expectLocs(await gw.http.patch('/api/users/me').set(u.auth).send({ active_env_id: 'nope' }), [
        ['body', 'active_env_id'],
      ]);
      expectLocs(await gw.http.patch('/api/users/me').set(u.auth).send({ email: 'not-an-email' }), [
        ['body', 'email'],
      ]);
    });

    it('lets a superuser pick any environment that exists, and answers 422 (not 500) for one that does not', async () => {
      const theirs = await h.env(carol);
      const any = await gw.http
        .patch(`/api/users/${root.id}`)
        .set(root.auth)
        .send({ active_env_id: theirs.id });
      expect(any.status).toBe(200);
      const unknown = await gw.http
        .patch(`/api/users/${root.id}`)
        .set(root.auth)
        .send({ active_env_id: randomUUID() });
      expect(unknown.status).toBe(422);
      expect(unknown.body.detail).toEqual([
        { loc: ['body', 'active_env_id'], msg: 'No such environment', type: 'value_error' },
      ]);
      expect((await h.me(root)).body.active_env_id).toBe(theirs.id);
    });
  });

  describe('/users/{id}', () => {
    it('lets a user read and update themselves', async () => {
      const u = await gw.user();
      const res = await gw.http.get(`/api/users/${u.id}`).set(u.auth);
      expect(res.status).toBe(200);
      expect(res.body).toEqual((await h.me(u)).body);
      const email = freshEmail('self');
      const patched = await gw.http.patch(`/api/users/${u.id}`).set(u.auth).send({ email });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ id: u.id, email });
    });

    it('answers 403 to a non-superuser touching someone else, and changes nothing', async () => {
      const before = (await h.me(carol)).body;
      expectForbidden(await gw.http.get(`/api/users/${carol.id}`).set(bob.auth));
      expectForbidden(
        await gw.http.patch(`/api/users/${carol.id}`).set(bob.auth).send({ email: freshEmail() }),
      );
      expectForbidden(
        await gw.http.patch(`/api/users/${carol.id}`).set(bob.auth).send({ password: 'taken-over-1' }),
      );
      expectForbidden(await gw.http.delete(`/api/users/${carol.id}`).set(bob.auth));
      expect((await h.me(carol)).body).toEqual(before);
      expect((await h.login(carol.email, carol.password)).status).toBe(200);
      // Deleting users, oneself included, is for superusers.
      expectForbidden(await gw.http.delete(`/api/users/${bob.id}`).set(bob.auth));
      expect((await h.me(bob)).status).toBe(200);
      expectUnauthorized(await gw.http.get(`/api/users/${carol.id}`));
      expectUnauthorized(await gw.http.delete(`/api/users/${carol.id}`));
    });

    it('lets a superuser read, update and delete anyone', async () => {
      const u = await gw.user();
      const read = await gw.http.get(`/api/users/${u.id}`).set(root.auth);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id: u.id, email: u.email });
      const promoted = await gw.http
        .patch(`/api/users/${u.id}`)
        .set(root.auth)
        .send({ is_superuser: true, is_verified: true });
      expect(promoted.status).toBe(200);
      expect(promoted.body).toMatchObject({ id: u.id, is_superuser: true, is_verified: true });
      const pw = await gw.http
        .patch(`/api/users/${u.id}`)
        .set(root.auth)
        .send({ password: 'set-by-admin-1' });
      expect(pw.status).toBe(200);
      expect((await h.login(u.email, 'set-by-admin-1')).status).toBe(200);
      const dup = await gw.http.patch(`/api/users/${u.id}`).set(root.auth).send({ email: alice.email });
      expect(dup.status).toBe(400);
      expect(dup.body).toEqual({ detail: 'UPDATE_USER_EMAIL_ALREADY_EXISTS' });
      const del = await gw.http.delete(`/api/users/${u.id}`).set(root.auth);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      expectNotFound(await gw.http.get(`/api/users/${u.id}`).set(root.auth));
      expectUnauthorized(await h.me(u));
      expect((await h.login(u.email, 'set-by-admin-1')).body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
    });

    it('answers 404 for an unknown id and 422 for a malformed one', async () => {
      const ghost = randomUUID();
      for (const who of [root, bob]) {
        expectNotFound(await gw.http.get(`/api/users/${ghost}`).set(who.auth));
        expectNotFound(await gw.http.patch(`/api/users/${ghost}`).set(who.auth).send({}));
        expectNotFound(await gw.http.delete(`/api/users/${ghost}`).set(who.auth));
      }
      expectLocs(await gw.http.get('/api/users/not-a-uuid').set(root.auth), [['path', 'id']]);
      expectLocs(await gw.http.patch('/api/users/not-a-uuid').set(root.auth).send({}), [['path', 'id']]);
      expectLocs(await gw.http.delete('/api/users/12345').set(root.auth), [['path', 'id']]);
    });
  });

  describe('change-password', () => {
    it('refuses a wrong old password with CHANGE_PASSWORD_BAD_PASSWORD', async () => {
      const u = await gw.user();
      const res = await gw.http
        .post('/api/users/me/change-password')
        .set(u.auth)
        .send({ old_password: 'not-my-password', new_password: 'new-password-123' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'CHANGE_PASSWORD_BAD_PASSWORD' });
      expect((await h.login(u.email, 'new-password-123')).status).toBe(400);
      expect((await h.login(u.email, u.password)).status).toBe(200);
    });

    it('refuses a short new password with a reason', async () => {
      const u = await gw.user();
      const res = await gw.http
        .post('/api/users/me/change-password')
        .set(u.auth)
        .send({ old_password: u.password, new_password: 'Sh0rt!' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        detail: { code: expect.any(String), reason: expect.stringMatching(/8 characters/) },
      });
      expect((await h.login(u.email, u.password)).status).toBe(200);
    });

    it('changes the password: the new one logs in, the old one no longer does', async () => {
      const u = await gw.user();
      const res = await gw.http
        .post('/api/users/me/change-password')
        .set(u.auth)
        .send({ old_password: u.password, new_password: 'changed-password-1' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual((await h.me(u)).body);
      expect(JSON.stringify(res.body)).not.toContain('changed-password-1');
      const ok = await h.login(u.email, 'changed-password-1');
      expect(ok.status).toBe(200);
      expect(ok.body.token_type).toBe('bearer');
      expect((await h.login(u.email, u.password)).body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      expectLocs(
        await gw.http.post('/api/users/me/change-password').set(u.auth).send({ old_password: 'x' }),
        [['body', 'new_password']],
      );
      expectUnauthorized(
        await gw.http.post('/api/users/me/change-password').send({ old_password: 'a', new_password: 'b' }),
      );
    });
  });

  describe('service-account tokens', () => {
    let owner: TestUser;
    let member: TestUser;
    let env: { id: string };
    let team: { id: string };
    let otherTeam: { id: string };
    beforeAll(async () => {
      owner = await gw.user();
      member = await gw.user();
      env = await h.env(owner);
      team = await h.team(owner, env.id);
      otherTeam = await h.team(owner, env.id);
      await h.addMembers(owner, team.id, [member.id]);
    });
    const create = (u: TestUser, body: Record<string, unknown> = {}) =>
      gw.http.post('/api/users/me/service-account-token').set(u.auth).send(body);

    it('needs an active environment (422 without one)', async () => {
      const u = await gw.user();
      const res = await create(u, { name: 'ci' });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: expect.arrayContaining(['body']), msg: expect.any(String), type: expect.any(String) },
      ]);
      expectUnauthorized(await gw.http.post('/api/users/me/service-account-token').send({}));
    });

    it('creates a token for a service account that can read the environment, and no more', async () => {
      const res = await create(owner, { name: 'ci' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'ci',
        user_id: expect.any(String),
        env_id: env.id,
        team_id: null,
        created_at: expect.any(String),
        expires_at: expect.any(String),
        revoked: false,
        access_token: expect.any(String),
        token_type: 'bearer',
      });
      const days = (Date.parse(res.body.expires_at) - Date.now()) / 86400_000;
      expect(days).toBeGreaterThan(364);
      expect(days).toBeLessThanOrEqual(365);
      const sa = `Bearer ${res.body.access_token}`;
      const self = await gw.http.get('/api/users/me').set('Authorization', sa);
      expect(self.status).toBe(200);
      expect(self.body).toMatchObject({ id: res.body.user_id, is_superuser: false, active_env_id: env.id });
      expect(self.body.id).not.toBe(owner.id);
      const read = await gw.http.get(`/api/envs/${env.id}`).set('Authorization', sa);
      expect(read.status).toBe(200);
      expect(read.body.id).toBe(env.id);
      // A member, not an admin, and in no team.
      expectForbidden(
        await gw.http.patch(`/api/envs/${env.id}`).set('Authorization', sa).send({ name: 'x' }),
      );
      expectForbidden(await gw.http.get(`/api/teams/${team.id}`).set('Authorization', sa));
      const foreign = await h.env(carol);
      expectForbidden(await gw.http.get(`/api/envs/${foreign.id}`).set('Authorization', sa));
      // Service accounts do not mint more tokens, nor show up as people.
      expectForbidden(
        await gw.http.post('/api/users/me/service-account-token').set('Authorization', sa).send({}),
      );
      const people = await gw.http.get('/api/users?size=100').set(root.auth);
      expect(people.body.items.map((u: { id: string }) => u.id)).not.toContain(res.body.user_id);
    });

    it('with team_id of a team the caller owns, the token can read that team', async () => {
      const res = await create(owner, { name: 'team-bot', team_id: team.id, expires_in_days: 7 });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ team_id: team.id, env_id: env.id, name: 'team-bot' });
      const sa = `Bearer ${res.body.access_token}`;
      const read = await gw.http.get(`/api/teams/${team.id}`).set('Authorization', sa);
      expect(read.status).toBe(200);
      expect(read.body.id).toBe(team.id);
      expectForbidden(await gw.http.get(`/api/teams/${otherTeam.id}`).set('Authorization', sa));
    });

    it('refuses a team_id of a team the caller does not own with 403, and of no team with 422', async () => {
      expect((await h.me(member)).body.active_env_id).toBe(env.id);
      const res = await create(member, { team_id: team.id });
      expectForbidden(res);
      const outsider = await create(member, { team_id: otherTeam.id });
      expectForbidden(outsider);
      // A team_id that names no team is a validation error of the body, not a 404 of the path.
      expectLocs(await create(owner, { team_id: randomUUID() }), [['body', 'team_id']]);
      const before = await gw.http.get('/api/users/me/service-account-tokens').set(member.auth);
      expect(before.body).toEqual([]);
    });

    it('lists tokens without the token, and revokes one at once; others cannot revoke it', async () => {
      const made = await create(owner, { name: 'to-revoke' });
      expect(made.status).toBe(201);
      const list = await gw.http.get('/api/users/me/service-account-tokens').set(owner.auth);
      expect(list.status).toBe(200);
      const entry = list.body.find((t: { id: string }) => t.id === made.body.id);
      const { access_token: _token, token_type: _type, ...withoutToken } = made.body;
      expect(entry).toEqual(withoutToken);
      expect(JSON.stringify(list.body)).not.toContain(made.body.access_token);
      for (const t of list.body) expect(t.access_token).toBeUndefined();
      const sa = { Authorization: `Bearer ${made.body.access_token}` };
      expect((await gw.http.get('/api/users/me').set(sa)).status).toBe(200);
      // Someone else cannot revoke it.
      expectForbidden(
        await gw.http.delete(`/api/users/me/service-account-tokens/${made.body.id}`).set(member.auth),
      );
      expect((await gw.http.get('/api/users/me').set(sa)).status).toBe(200);
      const del = await gw.http
        .delete(`/api/users/me/service-account-tokens/${made.body.id}`)
        .set(owner.auth);
      expect(del.status).toBe(204);
      expectUnauthorized(await gw.http.get('/api/users/me').set(sa));
      expectUnauthorized(await gw.http.get(`/api/envs/${env.id}`).set(sa));
      const after = await gw.http.get('/api/users/me/service-account-tokens').set(owner.auth);
      expect(after.body.find((t: { id: string }) => t.id === made.body.id).revoked).toBe(true);
      expectNotFound(
        await gw.http.delete(`/api/users/me/service-account-tokens/${randomUUID()}`).set(owner.auth),
      );
      expectLocs(await gw.http.delete('/api/users/me/service-account-tokens/xyz').set(owner.auth), [
        ['path', 'id'],
      ]);
    });
  });
});

describe.each(databaseKinds())('last superuser on %s', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw.close());

  it('refuses to delete, demote or deactivate the last active superuser (409)', async () => {
    const root = await gw.superuser();
    const conflict = (res: Response) => {
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ detail: expect.any(String) });
    };
    conflict(await gw.http.delete(`/api/users/${root.id}`).set(root.auth));
    conflict(await gw.http.patch('/api/users/me').set(root.auth).send({ is_superuser: false }));
    conflict(await gw.http.patch(`/api/users/${root.id}`).set(root.auth).send({ is_active: false }));
    expect((await gw.http.get('/api/users/me').set(root.auth)).body).toMatchObject({
      is_superuser: true,
      is_active: true,
    });
    // With a second active superuser, the first may step down.
    const second = await gw.superuser();
    const demoted = await gw.http.patch('/api/users/me').set(root.auth).send({ is_superuser: false });
    expect(demoted.status).toBe(200);
    expect(demoted.body.is_superuser).toBe(false);
    conflict(await gw.http.delete(`/api/users/${second.id}`).set(second.auth));
    const gone = await gw.http.delete(`/api/users/${root.id}`).set(second.auth);
    expect(gone.status).toBe(204);
  });
});

describe.each(databaseKinds())('export and import on %s', (kind) => {
  let gw: TestGateway;
  let root: TestUser;
  let alice: TestUser;
  let bob: TestUser;
  let env: { id: string };
  const h = helpers(() => gw);
  const brokerPassword = 'br0ker-secret-value';
  const exportAll = async (u: TestUser = root) => {
    const res = await gw.http.get('/api/users/export-all').set(u.auth);
    expect(res.status).toBe(200);
    return res.body as Doc;
  };
  const importAll = (doc: unknown, u: TestUser = root) =>
    gw.http
      .post('/api/users/import-all')
      .set(u.auth)
      .send(doc as object);

  beforeAll(async () => {
    gw = await startTestGateway(kind, { SLUICE_LOGIN_MAX_PER_ADDRESS: '10000' });
    root = await gw.superuser();
    alice = await gw.user();
    bob = await gw.user();
    env = await h.env(alice, 'prod', {
      description: 'Production',
      use_retention: true,
      retention_configuration: {
        bootstrap_servers: 'kafka:9092',
        security_protocol: 'SASL_SSL',
        sasl_mechanism: 'PLAIN',
        sasl_username: 'svc',
        sasl_password: brokerPassword,
      },
    });
    const team = await h.team(alice, env.id, 'core');
    await h.addMembers(alice, team.id, [bob.id]);
    await h.env(bob, 'bob-sandbox');
    // Automation that lives beside the people: a service-account token and an API key.
    expect(
      (await gw.http.post('/api/users/me/service-account-token').set(alice.auth).send({ team_id: team.id }))
        .status,
    ).toBe(201);
    expect(
      (
        await gw.http
          .post('/api/api-keys')
          .set(root.auth)
          .send({ name: 'ci', env_ids: [env.id] })
      ).status,
    ).toBe(201);
  });
  afterAll(() => gw.close());

  it('is for superusers only', async () => {
    expectForbidden(await gw.http.get('/api/users/export-all').set(alice.auth));
    const doc = await exportAll();
    expectForbidden(await importAll(doc, alice));
    expectUnauthorized(await gw.http.get('/api/users/export-all'));
    expectUnauthorized(await gw.http.post('/api/users/import-all').send(doc));
    expect(canonical(await exportAll())).toEqual(canonical(doc));
  });

  it('exports the five arrays, without passwords or broker passwords', async () => {
    const res = await gw.http.get('/api/users/export-all').set(root.auth);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(EXPORT_KEYS);
    const doc = res.body as Doc;
    expect(doc.users.map((u) => u.id).sort()).toEqual([root.id, alice.id, bob.id].sort());
    for (const u of doc.users) expect(Object.keys(u).sort()).toEqual(USER_KEYS);
    expect(doc.envs.map((e) => e.name).sort()).toEqual(['bob-sandbox', 'prod']);
    expect(doc.envs.find((e) => e.id === env.id)).toEqual({
      id: env.id,
      name: 'prod',
      description: 'Production',
      use_retention: true,
      retention_configuration: expect.objectContaining({ sasl_username: 'svc', sasl_password: '<redacted>' }),
    });
    expect(doc.teams).toEqual([{ id: expect.any(String), name: 'core', description: null, env_id: env.id }]);
    expect(doc.env_members).toEqual(
      expect.arrayContaining([
        { user_id: alice.id, env_id: env.id, admin: true },
        { user_id: bob.id, env_id: env.id, admin: false },
      ]),
    );
    expect(doc.team_members).toEqual(
      expect.arrayContaining([
        { user_id: alice.id, team_id: doc.teams[0]!.id, admin: true },
        { user_id: bob.id, team_id: doc.teams[0]!.id, admin: false },
      ]),
    );
    for (const secret of [brokerPassword, root.password, alice.password, bob.password]) {
      expect(res.text).not.toContain(secret);
    }
    expect(res.text).not.toMatch(/hashed_password|\$2[aby]\$/);
  });

  it('exports a document that only references what it contains', async () => {
    const doc = await exportAll();
    const users = new Set(doc.users.map((u) => u.id));
    const teams = new Set(doc.teams.map((t) => t.id));
    for (const m of doc.env_members) expect(users).toContain(m.user_id);
    for (const m of doc.team_members) {
      expect(users).toContain(m.user_id);
      expect(teams).toContain(m.team_id);
    }
  });

  it('refuses a document with a dangling reference with 422 and changes nothing', async () => {
    const before = await exportAll();
    const ghost = randomUUID();
    const bad = {
      ...before,
      users: before.users.filter((u) => u.id !== bob.id),
      teams: [...before.teams, { id: randomUUID(), name: 'new-team', description: null, env_id: env.id }],
      team_members: [...before.team_members, { user_id: ghost, team_id: before.teams[0]!.id, admin: false }],
    };
    const res = await importAll(bad);
    expect(res.status).toBe(422);
    const i = bad.team_members.length - 1;
    expectLocs(res, [['body', 'team_members', i, 'user_id']]);
    expect(canonical(await exportAll())).toEqual(canonical(before));
    expect((await h.me(bob)).status).toBe(200);
  });

  it('refuses a document without the caller as an active superuser with 422 and changes nothing', async () => {
    const before = await exportAll();
    const demoted = {
      ...before,
      users: before.users.map((u) => (u.id === root.id ? { ...u, is_superuser: false } : u)),
    };
    expect((await importAll(demoted)).status).toBe(422);
    const inactive = {
      ...before,
      users: before.users.map((u) => (u.id === root.id ? { ...u, is_active: false } : u)),
    };
    expect((await importAll(inactive)).status).toBe(422);
    const without = { ...before, users: before.users.filter((u) => u.id !== root.id) };
    const res = await importAll(without);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([expect.objectContaining({ loc: ['body', 'users'] })]),
    );
    expectLocs(await importAll({ users: before.users }), [['body', 'envs']]);
    expect(canonical(await exportAll())).toEqual(canonical(before));
  });

  it('round-trips: an export imports unchanged, and an edited document becomes the new state', async () => {
    const original = await exportAll();
    const same = await importAll(original);
    expect(same.status).toBe(204);
    expect(same.text).toBe('');
    expect(canonical(await exportAll())).toEqual(canonical(original));

    const newTeam = { id: randomUUID(), name: 'imported-team', description: 'from a file', env_id: env.id };
    const modified: Doc = {
      users: original.users.filter((u) => u.id !== bob.id),
      envs: original.envs.filter((e) => e.name !== 'bob-sandbox'),
      teams: [...original.teams, newTeam],
      env_members: original.env_members.filter((m) => m.user_id !== bob.id && m.env_id === env.id),
      team_members: [
        ...original.team_members.filter((m) => m.user_id !== bob.id),
        { user_id: alice.id, team_id: newTeam.id, admin: true },
      ],
    };
    const res = await importAll(modified);
    expect(res.status).toBe(204);
    expect(canonical(await exportAll())).toEqual(canonical(modified));
    // Existing people keep their passwords and sessions; the removed one is gone.
    expect((await h.login(alice.email, alice.password)).status).toBe(200);
    expect((await h.login(root.email, root.password)).status).toBe(200);
    expect((await h.me(alice)).body.active_env_id).toBe(env.id);
    expect((await h.login(bob.email, bob.password)).body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
    expectUnauthorized(await h.me(bob));
    const team = await gw.http.get(`/api/teams/${newTeam.id}`).set(alice.auth);
    expect(team.status).toBe(200);
    expect(team.body).toMatchObject({ name: 'imported-team', description: 'from a file', env_id: env.id });
    // The broker password survived the round trip, sealed.
    const row = await gw.ctx.db
      .selectFrom('envs')
      .select('broker_secret')
      .where('id', '=', env.id)
      .executeTakeFirstOrThrow();
    expect(gw.ctx.secrets.open(row.broker_secret as string)).toBe(brokerPassword);
  });

  it('imports a new user without a usable password; they set one through forgot-password', async () => {
    const doc = await exportAll();
    const newcomer = {
      id: randomUUID(),
      email: freshEmail('imported'),
      is_active: true,
      is_superuser: false,
      is_verified: true,
      active_env_id: env.id,
    };
    const res = await importAll({
      ...doc,
      users: [...doc.users, newcomer],
      env_members: [...doc.env_members, { user_id: newcomer.id, env_id: env.id, admin: false }],
    });
    expect(res.status).toBe(204);
    expect((await h.login(newcomer.email, '!unusable!')).status).toBe(400);
    expect((await gw.http.post('/api/auth/forgot-password').send({ email: newcomer.email })).status).toBe(
      202,
    );
    const token = gw
      .outbox()
      .filter((m) => m.to === newcomer.email)
      .pop()!.token;
    expect(
      (await gw.http.post('/api/auth/reset-password').send({ token, password: 'welcome-aboard-1' })).status,
    ).toBe(200);
    const login = await h.login(newcomer.email, 'welcome-aboard-1');
    expect(login.status).toBe(200);
    const me = await h.me(login.body.access_token);
    expect(me.body).toEqual(newcomer);
    expect(
      (await gw.http.get(`/api/envs/${env.id}`).set({ Authorization: `Bearer ${login.body.access_token}` }))
        .status,
    ).toBe(200);
  });
});
