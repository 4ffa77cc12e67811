import { createHmac, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { forwardingProxy, type ForwardingProxy } from './forwarding-proxy.js';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

const PASSWORD = 'correct-horse-battery';

/** An HS256 JWT of exactly `payload`, signed with `key`. */
function handSigned(payload: object, key: Buffer): string {
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(payload)}`;
  return `${head}.${createHmac('sha256', key).update(head).digest('base64url')}`;
}
const USER_KEYS = ['active_env_id', 'email', 'id', 'is_active', 'is_superuser', 'is_verified'];
let seq = 0;
const freshEmail = (tag = 'auth') => `${tag}${++seq}-${randomUUID().slice(0, 8)}@example.com`;

/**
 * A supertest client that keeps every response body it sees, so the suite can
 * check at the end that no password ever came back.
 */
function recordingClient(gw: TestGateway, bodies: string[]) {
  return request((req: IncomingMessage, res: ServerResponse) => {
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    (res as { end: unknown }).end = (...args: unknown[]) => {
      const chunk = args[0];
      if (chunk !== undefined && typeof chunk !== 'function') bodies.push(String(chunk));
      return end(...args);
    };
    gw.app(req as never, res as never);
  });
}

describe.each(databaseKinds())('authentication on %s', (kind) => {
  let gw: TestGateway;
  let http: ReturnType<typeof request>;
  let admin: TestUser;
  const bodies: string[] = [];
  /** Every password this suite sends, to look for in responses and mails. */
  const passwords = new Set<string>([PASSWORD]);

  beforeAll(async () => {
    // Many logins from one address: keep the per-address throttle out of the way here.
    gw = await startTestGateway(kind, {
      SLUICE_LOGIN_MAX_PER_ADDRESS: '10000',
      SLUICE_MAIL_MAX_PER_ADDRESS: '10000',
    });
    http = recordingClient(gw, bodies);
    admin = await gw.superuser();
    passwords.add(admin.password);
  });
  afterAll(() => gw.close());

  const register = (email: string, password = PASSWORD, extra: Record<string, unknown> = {}) => {
    passwords.add(password);
    return http.post('/api/auth/register').send({ email, password, ...extra });
  };
  const login = (username: string, password: string, extra: Record<string, string> = {}) => {
    passwords.add(password);
    return http
      .post('/api/auth/jwt/login')
      .type('form')
      .send({ username, password, ...extra });
  };
  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
  const me = (token: string) => http.get('/api/users/me').set(bearer(token));
  const mailsTo = (email: string) => gw.outbox().filter((m) => m.to === email.toLowerCase());
  const lastMailTo = (email: string, subject: RegExp) => {
    const mails = mailsTo(email).filter((m) => subject.test(m.subject));
    expect(mails.length).toBeGreaterThan(0);
    return mails[mails.length - 1]!;
  };
  async function registered(password = PASSWORD) {
    const email = freshEmail();
    const res = await register(email, password);
    expect(res.status).toBe(201);
    const token = (await login(email, password)).body.access_token as string;
    expect(typeof token).toBe('string');
    return { id: res.body.id as string, email, password, token };
  }
  const unauthorized = (res: request.Response) => {
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: 'Unauthorized' });
    expect(res.headers['www-authenticate']).toBe('Bearer');
  };

  describe('register', () => {
    it('creates a user and answers 201 with a UserRead', async () => {
      const email = freshEmail();
      const res = await register(email);
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(USER_KEYS);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        email,
        is_active: true,
        is_superuser: false,
        is_verified: false,
        active_env_id: null,
      });
      const token = (await login(email, PASSWORD)).body.access_token as string;
      const self = await me(token);
      expect(self.status).toBe(200);
      expect(self.body).toEqual(res.body);
    });

    it('ignores is_superuser, is_active and is_verified in the body', async () => {
      const email = freshEmail();
      const res = await register(email, PASSWORD, {
        is_superuser: true,
        is_active: false,
        is_verified: true,
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ is_superuser: false, is_active: true, is_verified: false });
      // The account is an ordinary, active user: it logs in and cannot act as a superuser.
      const token = (await login(email, PASSWORD)).body.access_token as string;
      expect((await me(token)).body).toMatchObject({
        is_superuser: false,
        is_active: true,
        is_verified: false,
      });
      const exp = await http.get('/api/users/export-all').set(bearer(token));
      expect(exp.status).toBe(403);
      expect(typeof exp.body.detail).toBe('string');
    });

    it('refuses an address already registered, whatever its case', async () => {
      const email = freshEmail('Dup');
      expect((await register(email)).status).toBe(201);
      const same = await register(email, 'another-password-1');
      expect(same.status).toBe(400);
      expect(same.body).toEqual({ detail: 'REGISTER_USER_ALREADY_EXISTS' });
      const upper = await register(email.toUpperCase(), 'another-password-1');
      expect(upper.status).toBe(400);
      expect(upper.body).toEqual({ detail: 'REGISTER_USER_ALREADY_EXISTS' });
      const lower = await register(email.toLowerCase(), 'another-password-1');
      expect(lower.status).toBe(400);
      expect(lower.body).toEqual({ detail: 'REGISTER_USER_ALREADY_EXISTS' });
      // The first password still is the one that works.
      expect((await login(email, PASSWORD)).status).toBe(200);
      expect((await login(email, 'another-password-1')).body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
    });

    it('refuses a short password with REGISTER_INVALID_PASSWORD and a reason naming 8 characters', async () => {
      const email = freshEmail();
      const res = await register(email, 'Sh0rt!');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        detail: { code: 'REGISTER_INVALID_PASSWORD', reason: expect.stringMatching(/8 characters/) },
      });
      // Nothing was created: the address is still free.
      expect((await register(email)).status).toBe(201);
    });

    it('answers 422 with locations for a malformed e-mail or a missing password', async () => {
      const res = await register('not-an-email');
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ['body', 'email'], msg: expect.any(String), type: expect.any(String) },
      ]);
      const missing = await http.post('/api/auth/register').send({ email: freshEmail() });
      expect(missing.status).toBe(422);
      expect(missing.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([['body', 'password']]);
      const badJson = await http
        .post('/api/auth/register')
        .set('Content-Type', 'application/json')
        .send('{"email": ');
      expect(badJson.status).toBe(422);
      expect(badJson.body.detail[0].loc).toEqual(['body']);
    });
  });

  describe('login', () => {
    it('logs in with the form and answers a bearer token', async () => {
      const u = await registered();
      const res = await login(u.email, u.password);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ access_token: expect.any(String), token_type: 'bearer' });
      expect(res.body.access_token.split('.')).toHaveLength(3);
      const self = await me(res.body.access_token);
      expect(self.status).toBe(200);
      expect(self.body).toMatchObject({ id: u.id, email: u.email });
      // The optional OAuth2 fields are accepted; the e-mail is case-insensitive.
      const full = await login(u.email.toUpperCase(), u.password, {
        grant_type: 'password',
        scope: '',
        client_id: 'cli',
        client_secret: 'x',
      });
      expect(full.status).toBe(200);
      expect(full.body.token_type).toBe('bearer');
    });

    it('answers LOGIN_BAD_CREDENTIALS for a wrong password, an unknown e-mail and an inactive user alike', async () => {
      const u = await registered();
      const wrong = await login(u.email, 'not-the-password');
      expect(wrong.status).toBe(400);
      expect(wrong.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      const unknown = await login(freshEmail('ghost'), PASSWORD);
      expect(unknown.status).toBe(400);
      expect(unknown.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      const off = await http.patch(`/api/users/${u.id}`).set(admin.auth).send({ is_active: false });
      expect(off.status).toBe(200);
      expect(off.body.is_active).toBe(false);
      const inactive = await login(u.email, u.password);
      expect(inactive.status).toBe(400);
      expect(inactive.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      // And the tokens it held stop working.
      unauthorized(await me(u.token));
    });

    it('refuses a grant_type other than password with 422', async () => {
      const u = await registered();
      const res = await login(u.email, u.password, { grant_type: 'client_credentials' });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ['body', 'grant_type'], msg: expect.any(String), type: expect.any(String) },
      ]);
    });

    it('refuses a JSON body with 422: login is form-encoded', async () => {
      const u = await registered();
      const res = await http.post('/api/auth/jwt/login').send({ username: u.email, password: u.password });
      expect(res.status).toBe(422);
      expect(Array.isArray(res.body.detail)).toBe(true);
      expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
        expect.arrayContaining([
          ['body', 'username'],
          ['body', 'password'],
        ]),
      );
      expect(res.body.access_token).toBeUndefined();
    });

    it('answers 422 for missing form fields', async () => {
      const res = await http.post('/api/auth/jwt/login').type('form').send({ username: freshEmail() });
      expect(res.status).toBe(422);
      expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([['body', 'password']]);
    });
  });

  describe('token security', () => {
    let u: Awaited<ReturnType<typeof registered>>;
    beforeAll(async () => {
      u = await registered();
    });
    const now = () => Math.floor(Date.now() / 1000);
    const claims = () => ({ sub: u.id, jti: randomUUID(), iat: now(), exp: now() + 3600, kind: 'access' });
    const signed = (
      payload: object,
      key: jwt.Secret = gw.ctx.tokens.key as unknown as jwt.Secret,
      opts: jwt.SignOptions = {},
    ) => jwt.sign(payload, key, { algorithm: 'HS256', issuer: 'sluice', audience: 'sluice:api', ...opts });

    it('accepts a token built like the service builds them (control)', async () => {
      const res = await me(signed(claims()));
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(u.id);
    });

    it('refuses a missing, malformed or non-bearer credential', async () => {
      unauthorized(await http.get('/api/users/me'));
      unauthorized(await http.get('/api/users/me').set('Authorization', 'Bearer not.a.jwt'));
      unauthorized(await http.get('/api/users/me').set('Authorization', `Basic ${u.token}`));
      unauthorized(await http.get('/api/users/me').set('Authorization', `Bearer ${u.token}x`));
    });

    it('refuses a token signed with another secret', async () => {
      unauthorized(await me(signed(claims(), 'another-secret-another-secret-another-secret')));
    });

    it('refuses alg none', async () => {
      const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const body = { ...claims(), iss: 'sluice', aud: 'sluice:api' };
      unauthorized(await me(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(body)}.`));
      unauthorized(await me(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(body)}`));
    });

    it('refuses HS512 even with the right secret', async () => {
      unauthorized(await me(signed(claims(), undefined, { algorithm: 'HS512' })));
    });

    it('refuses a wrong audience or issuer', async () => {
      unauthorized(await me(signed(claims(), undefined, { audience: 'someone-else' })));
      unauthorized(await me(signed(claims(), undefined, { issuer: 'not-sluice' })));
      // Neither claim at all.
      unauthorized(
        await me(jwt.sign(claims(), gw.ctx.tokens.key as unknown as jwt.Secret, { algorithm: 'HS256' })),
      );
    });

    it('refuses an expired token', async () => {
      unauthorized(await me(signed({ ...claims(), iat: now() - 7200, exp: now() - 60 })));
    });

    it('refuses a well-signed token of a user that does not exist', async () => {
      unauthorized(await me(signed({ ...claims(), sub: randomUUID() })));
    });

    it('refuses a token whose sub, iat or kind is malformed with 401, signed with the right key or not', async () => {
      for (const bad of [
        { sub: 'not-a-uuid' },
        { sub: `${u.id}x` },
        { sub: "' or 1=1 --" },
        { sub: 12345 },
        { sub: '' },
        { iat: 'yesterday' },
        { iat: undefined },
        { kind: 'superuser' },
      ]) {
        // Signed by hand: jsonwebtoken's sign refuses (or fills in) some of these claims.
        const payload = { ...claims(), iss: 'sluice', aud: 'sluice:api', ...bad };
        const right = handSigned(payload, gw.ctx.tokens.key.export());
        unauthorized(await me(right));
        unauthorized(await me(handSigned(payload, Buffer.from('another-secret-another-secret-another'))));
        unauthorized(await http.post('/api/auth/jwt/refresh').set(bearer(right)));
        unauthorized(await http.get('/api/users').set(bearer(right)));
      }
    });
  });

  describe('logout and refresh', () => {
    it('logout answers 200 with an empty body and kills that token at once, not the others', async () => {
      const u = await registered();
      const second = (await login(u.email, u.password)).body.access_token as string;
      const out = await http.post('/api/auth/jwt/logout').set(bearer(u.token));
      expect(out.status).toBe(200);
      expect(out.text).toBe('');
      unauthorized(await me(u.token));
      unauthorized(await http.post('/api/auth/jwt/logout').set(bearer(u.token)));
      unauthorized(await http.post('/api/auth/jwt/refresh').set(bearer(u.token)));
      const still = await me(second);
      expect(still.status).toBe(200);
      expect(still.body.id).toBe(u.id);
      unauthorized(await http.post('/api/auth/jwt/logout'));
    });

    it('refresh answers a new token that works', async () => {
      const u = await registered();
      const res = await http.post('/api/auth/jwt/refresh').set(bearer(u.token));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ access_token: expect.any(String), token_type: 'bearer' });
      expect(res.body.access_token).not.toBe(u.token);
      const self = await me(res.body.access_token);
      expect(self.status).toBe(200);
      expect(self.body.id).toBe(u.id);
      // Logging the new token out leaves the old one alone, and vice versa.
      expect((await http.post('/api/auth/jwt/logout').set(bearer(res.body.access_token))).status).toBe(200);
      unauthorized(await me(res.body.access_token));
      expect((await me(u.token)).status).toBe(200);
      unauthorized(await http.post('/api/auth/jwt/refresh'));
    });

    it("refreshing an API key's 10-minute token never reaches past the key's 10 minutes", async () => {
      const env = (
        await http
          .post('/api/envs/')
          .set(bearer(admin.token))
          .send({ name: `key-${randomUUID()}` })
      ).body as { id: string };
      const key = (
        await http
          .post('/api/api-keys')
          .set(bearer(admin.token))
          .send({ name: 'refresher', env_ids: [env.id] })
      ).body.key as string;
      const exchanged = await http.post('/api/auth/api-key/token').send({ api_key: key });
      expect(exchanged.status).toBe(200);
      const first = jwt.decode(exchanged.body.access_token) as { exp: number; kind: string };
      let token = exchanged.body.access_token as string;
      for (let i = 0; i < 3; i++) {
        const res = await http.post('/api/auth/jwt/refresh').set(bearer(token));
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ access_token: expect.any(String), token_type: 'bearer' });
        expect(res.body.expires_in).toBeLessThanOrEqual(600);
        const claims = jwt.decode(res.body.access_token) as { exp: number; kind: string };
        // The same kind and no later expiry than the exchange gave: not a 24-hour login token.
        expect(claims.kind).toBe('api-key');
        expect(claims.exp).toBeLessThanOrEqual(first.exp);
        token = res.body.access_token as string;
        expect((await http.get(`/api/envs/${env.id}`).set(bearer(token))).status).toBe(200);
      }
      // A login token still refreshes to a full lifetime.
      const u = await registered();
      const fresh = await http.post('/api/auth/jwt/refresh').set(bearer(u.token));
      expect(fresh.body.expires_in).toBe(gw.ctx.config.tokenLifetimeS);
      expect((jwt.decode(fresh.body.access_token) as { kind: string }).kind).toBe('access');
    });

    it("refreshing a service-account token keeps the service account's expiry", async () => {
      const u = await registered();
      await http
        .post('/api/envs/')
        .set(bearer(u.token))
        .send({ name: `sa-${randomUUID()}` });
      const sa = await http
        .post('/api/users/me/service-account-token')
        .set(bearer(u.token))
        .send({ expires_in_days: 1 });
      expect(sa.status).toBe(201);
      const before = jwt.decode(sa.body.access_token) as { exp: number };
      const res = await http.post('/api/auth/jwt/refresh').set(bearer(sa.body.access_token));
      expect(res.status).toBe(200);
      const after = jwt.decode(res.body.access_token) as { exp: number; kind: string };
      expect(after.kind).toBe('service');
      expect(after.exp).toBeLessThanOrEqual(before.exp);
      expect((await me(res.body.access_token)).status).toBe(200);
    });
  });

  describe('a password change ends the other sessions', () => {
    const changePassword = (token: string, old_password: string, new_password: string) => {
      passwords.add(new_password);
      return http
        .post('/api/users/me/change-password')
        .set(bearer(token))
        .send({ old_password, new_password });
    };

    it('change-password: the caller keeps this token, every other token of theirs stops at once', async () => {
      const u = await registered();
      const other = (await login(u.email, u.password)).body.access_token as string;
      // Both tokens in use (and in the gateway's principal cache) right before the change.
      expect((await me(u.token)).status).toBe(200);
      expect((await me(other)).status).toBe(200);
      const res = await changePassword(u.token, u.password, 'changed-password-2');
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_KEYS);
      unauthorized(await me(other));
      unauthorized(await http.post('/api/auth/jwt/refresh').set(bearer(other)));
      expect((await me(u.token)).status).toBe(200);
      // The kept token refreshes; the new token and a new login work; logout still ends the kept one.
      const refreshed = (await http.post('/api/auth/jwt/refresh').set(bearer(u.token))).body.access_token;
      expect((await me(refreshed)).status).toBe(200);
      const relogged = (await login(u.email, 'changed-password-2')).body.access_token as string;
      expect((await me(relogged)).status).toBe(200);
      expect((await http.post('/api/auth/jwt/logout').set(bearer(u.token))).status).toBe(200);
      unauthorized(await me(u.token));
      expect((await me(refreshed)).status).toBe(200);
    });

    it('a second change from another session keeps only that session', async () => {
      const u = await registered();
      const second = (await login(u.email, u.password)).body.access_token as string;
      expect((await changePassword(u.token, u.password, 'changed-password-3')).status).toBe(200);
      const third = (await login(u.email, 'changed-password-3')).body.access_token as string;
      expect((await changePassword(third, 'changed-password-3', 'changed-password-4')).status).toBe(200);
      unauthorized(await me(u.token));
      unauthorized(await me(second));
      expect((await me(third)).status).toBe(200);
    });

    it('PATCH /users/me with a password: the same', async () => {
      const u = await registered();
      const other = (await login(u.email, u.password)).body.access_token as string;
      expect((await me(other)).status).toBe(200);
      passwords.add('patched-password-5');
      const res = await http
        .patch('/api/users/me')
        .set(bearer(u.token))
        .send({ password: 'patched-password-5' });
      expect(res.status).toBe(200);
      unauthorized(await me(other));
      expect((await me(u.token)).status).toBe(200);
      // A patch without a password ends nothing.
      const third = (await login(u.email, 'patched-password-5')).body.access_token as string;
      expect(
        (await http.patch('/api/users/me').set(bearer(u.token)).send({ email: freshEmail() })).status,
      ).toBe(200);
      expect((await me(third)).status).toBe(200);
    });

    it("a superuser's PATCH /users/{id} with a password ends every token of that user", async () => {
      const u = await registered();
      const other = (await login(u.email, u.password)).body.access_token as string;
      expect((await me(u.token)).status).toBe(200);
      passwords.add('set-by-admin-6');
      const res = await http
        .patch(`/api/users/${u.id}`)
        .set(bearer(admin.token))
        .send({ password: 'set-by-admin-6' });
      expect(res.status).toBe(200);
      unauthorized(await me(u.token));
      unauthorized(await me(other));
      expect((await me(admin.token)).status).toBe(200);
      expect((await login(u.email, 'set-by-admin-6')).status).toBe(200);
    });

    it('a reset by mail ends every token, the kept one of an earlier change too', async () => {
      const u = await registered();
      expect((await changePassword(u.token, u.password, 'changed-password-7')).status).toBe(200);
      expect((await http.post('/api/auth/forgot-password').send({ email: u.email })).status).toBe(202);
      const token = lastMailTo(u.email, /reset/i).token;
      passwords.add('reset-password-8');
      const reset = await http.post('/api/auth/reset-password').send({ token, password: 'reset-password-8' });
      expect(reset.status).toBe(200);
      unauthorized(await me(u.token));
    });
  });

  describe('forgot and reset password', () => {
    const forgot = (email: string) => http.post('/api/auth/forgot-password').send({ email });
    const reset = (token: string, password: string) => {
      passwords.add(password);
      return http.post('/api/auth/reset-password').send({ token, password });
    };
    const resetToken = async (email: string) => {
      const res = await forgot(email);
      expect(res.status).toBe(202);
      return lastMailTo(email, /reset/i).token;
    };

    it('always answers 202 with an empty body, and mails a token only to real accounts', async () => {
      const ghost = freshEmail('ghost');
      const before = gw.outbox().length;
      const unknown = await forgot(ghost);
      expect(unknown.status).toBe(202);
      expect(unknown.text).toBe('');
      expect(gw.outbox().length).toBe(before);
      const u = await registered();
      const known = await forgot(u.email);
      expect(known.status).toBe(202);
      expect(known.text).toBe('');
      const mail = lastMailTo(u.email, /reset/i);
      expect(mail.token).toEqual(expect.any(String));
      expect(mail.token.length).toBeGreaterThanOrEqual(20);
      expect(mail.text).toContain(mail.token);
      expect((await forgot('not-an-email')).status).toBe(422);
    });

    it('resets once: the new password logs in, the old one and older tokens stop working', async () => {
      const u = await registered();
      const token = await resetToken(u.email);
      const res = await reset(token, 'brand-new-password-1');
      expect(res.status).toBe(200);
      expect(res.text).toBe('');
      const old = await login(u.email, u.password);
      expect(old.status).toBe(400);
      expect(old.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      const fresh = await login(u.email, 'brand-new-password-1');
      expect(fresh.status).toBe(200);
      expect((await me(fresh.body.access_token)).status).toBe(200);
      // Tokens issued before the reset are dead.
      unauthorized(await me(u.token));
      // The reset token is single-use.
      const again = await reset(token, 'another-new-password-2');
      expect(again.status).toBe(400);
      expect(again.body).toEqual({ detail: 'RESET_PASSWORD_BAD_TOKEN' });
      expect((await login(u.email, 'another-new-password-2')).status).toBe(400);
    });

    it('refuses an unknown token with RESET_PASSWORD_BAD_TOKEN', async () => {
      const res = await reset('definitely-not-a-token', 'whatever-password-1');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'RESET_PASSWORD_BAD_TOKEN' });
      const empty = await http.post('/api/auth/reset-password').send({ token: '', password: 'x' });
      expect(empty.status).toBe(422);
    });

    it('refuses a short password with RESET_PASSWORD_INVALID_PASSWORD and keeps the token usable', async () => {
      const u = await registered();
      const token = await resetToken(u.email);
      const res = await reset(token, 'Sh0rt!');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        detail: { code: 'RESET_PASSWORD_INVALID_PASSWORD', reason: expect.stringMatching(/8 characters/) },
      });
      // Nothing changed...
      expect((await login(u.email, u.password)).status).toBe(200);
      // ...and the user can try again with a valid password using the same mail.
      const retry = await reset(token, 'long-enough-password-1');
      expect(retry.status).toBe(200);
      expect((await login(u.email, 'long-enough-password-1')).status).toBe(200);
    });

    it('a reset token stops working once the password changed by other means', async () => {
      const u = await registered();
      const token = await resetToken(u.email);
      const changed = await http
        .post('/api/users/me/change-password')
        .set(bearer(u.token))
        .send({ old_password: u.password, new_password: 'changed-password-1' });
      passwords.add('changed-password-1');
      expect(changed.status).toBe(200);
      const res = await reset(token, 'reset-password-9');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'RESET_PASSWORD_BAD_TOKEN' });
      expect((await login(u.email, 'changed-password-1')).status).toBe(200);
    });
  });

  describe('verification', () => {
    const requestVerify = (email: string) => http.post('/api/auth/request-verify-token').send({ email });
    const verify = (token: string) => http.post('/api/auth/verify').send({ token });

    it('request-verify-token always answers 202 with an empty body', async () => {
      const unknown = await requestVerify(freshEmail('ghost'));
      expect(unknown.status).toBe(202);
      expect(unknown.text).toBe('');
      const u = await registered();
      const known = await requestVerify(u.email);
      expect(known.status).toBe(202);
      expect(known.text).toBe('');
      expect(mailsTo(u.email).filter((m) => /verif/i.test(m.subject)).length).toBeGreaterThanOrEqual(2);
    });

    it('verifies with the mailed token, once', async () => {
      const u = await registered();
      expect((await requestVerify(u.email)).status).toBe(202);
      const token = lastMailTo(u.email, /verif/i).token;
      const res = await verify(token);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_KEYS);
      expect(res.body).toMatchObject({ id: u.id, email: u.email, is_verified: true });
      expect((await me(u.token)).body.is_verified).toBe(true);
      const again = await verify(token);
      expect(again.status).toBe(400);
      expect(again.body.detail).toMatch(/^VERIFY_USER_(BAD_TOKEN|ALREADY_VERIFIED)$/);
      // A verified user gets no more mails but still a 202.
      const count = gw.outbox().length;
      expect((await requestVerify(u.email)).status).toBe(202);
      expect(gw.outbox().length).toBe(count);
    });

    it('refuses an unknown token with VERIFY_USER_BAD_TOKEN', async () => {
      const res = await verify('not-a-verification-token');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'VERIFY_USER_BAD_TOKEN' });
    });

    it('answers VERIFY_USER_ALREADY_VERIFIED for a token of an account verified meanwhile', async () => {
      const u = await registered();
      const token = lastMailTo(u.email, /verif/i).token;
      const patched = await http.patch(`/api/users/${u.id}`).set(admin.auth).send({ is_verified: true });
      expect(patched.status).toBe(200);
      const res = await verify(token);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'VERIFY_USER_ALREADY_VERIFIED' });
    });

    it('a token mailed to the old address does not verify a new address', async () => {
      const u = await registered();
      const token = lastMailTo(u.email, /verif/i).token;
      const newEmail = freshEmail('moved');
      const patched = await http.patch('/api/users/me').set(bearer(u.token)).send({ email: newEmail });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ email: newEmail, is_verified: false });
      const res = await verify(token);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ detail: 'VERIFY_USER_BAD_TOKEN' });
      expect((await me(u.token)).body.is_verified).toBe(false);
    });
  });

  it('never returns a password in a response body or writes one in a mail', () => {
    expect(bodies.length).toBeGreaterThan(50);
    const mails = gw.outbox().map((m) => JSON.stringify(m));
    expect(mails.length).toBeGreaterThan(5);
    for (const pw of passwords) {
      for (const b of bodies) expect(b).not.toContain(pw);
      for (const m of mails) expect(m).not.toContain(pw);
    }
    for (const b of bodies) expect(b).not.toMatch(/hashed_password|\$2[aby]\$/);
  });
});

describe.each(databaseKinds())('authentication options on %s', (kind) => {
  describe('SLUICE_ALLOW_REGISTRATION=false', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway(kind, { SLUICE_ALLOW_REGISTRATION: 'false' });
    });
    afterAll(() => gw.close());

    it('answers 404 to registration and creates nobody; existing accounts still log in', async () => {
      const email = freshEmail('closed');
      const res = await gw.http.post('/api/auth/register').send({ email, password: PASSWORD });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Not Found' });
      const empty = await gw.http.post('/api/auth/register').send({});
      expect(empty.status).toBe(404);
      expect(empty.body).toEqual({ detail: 'Not Found' });
      const login = await gw.http
        .post('/api/auth/jwt/login')
        .type('form')
        .send({ username: email, password: PASSWORD });
      expect(login.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      const admin = await gw.superuser();
      const self = await gw.http.get('/api/users/me').set(admin.auth);
      expect(self.status).toBe(200);
    });
  });

  describe('SLUICE_REQUIRE_VERIFIED=true', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway(kind, { SLUICE_REQUIRE_VERIFIED: 'true' });
    });
    afterAll(() => gw.close());

    it('refuses an unverified user with LOGIN_USER_NOT_VERIFIED until they verify', async () => {
      const email = freshEmail('unverified');
      expect((await gw.http.post('/api/auth/register').send({ email, password: PASSWORD })).status).toBe(201);
      const login = () =>
        gw.http.post('/api/auth/jwt/login').type('form').send({ username: email, password: PASSWORD });
      const refused = await login();
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ detail: 'LOGIN_USER_NOT_VERIFIED' });
      // A wrong password says nothing about verification.
      const wrong = await gw.http
        .post('/api/auth/jwt/login')
        .type('form')
        .send({ username: email, password: 'wrong-password-1' });
      expect(wrong.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      const token = gw.outbox().filter((m) => m.to === email && /verif/i.test(m.subject))[0]!.token;
      const verified = await gw.http.post('/api/auth/verify').send({ token });
      expect(verified.status).toBe(200);
      expect(verified.body.is_verified).toBe(true);
      const ok = await login();
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ access_token: expect.any(String), token_type: 'bearer' });
    });
  });

  describe('login throttling', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      // The test plays the one proxy in front of the gateway: the client address is the
      // X-Forwarded-For it writes, so that one test plays several clients.
      gw = await startTestGateway(kind, {
        SLUICE_LOGIN_MAX_PER_ACCOUNT: '3',
        SLUICE_LOGIN_MAX_PER_ADDRESS: '8',
        SLUICE_TRUST_PROXY: '1',
      });
    });
    afterAll(() => gw.close());
    const attempt = (from: string, username: string, password: string) =>
      gw.http
        .post('/api/auth/jwt/login')
        .set('X-Forwarded-For', from)
        .type('form')
        .send({ username, password });

    it('answers 429 with Retry-After after 3 failed attempts on one account from one address', async () => {
      const victim = await gw.user();
      const other = await gw.user();
      for (let i = 0; i < 3; i++) {
        const res = await attempt('203.0.113.1', victim.email, `wrong-password-${i}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      }
      const blocked = await attempt('203.0.113.1', victim.email, 'wrong-password-3');
      expect(blocked.status).toBe(429);
      expect(blocked.body).toEqual({ detail: 'LOGIN_TOO_MANY_ATTEMPTS' });
      const retryAfter = Number(blocked.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(900);
      // From that address even the right password waits; the address case does not dodge the limit.
      expect((await attempt('203.0.113.1', victim.email, victim.password)).status).toBe(429);
      expect((await attempt('203.0.113.1', victim.email.toUpperCase(), victim.password)).status).toBe(429);
      // Another account from the same address is unaffected.
      expect((await attempt('203.0.113.1', other.email, other.password)).status).toBe(200);
      // The victim's existing token still works: throttling is about logins only.
      expect((await gw.http.get('/api/users/me').set(victim.auth)).status).toBe(200);
    });

    it('a stranger who fails on an account does not lock its owner out', async () => {
      const owner = await gw.user();
      for (let i = 0; i < 3; i++) {
        expect((await attempt('198.51.100.7', owner.email, `guess-${i}`)).status).toBe(400);
      }
      expect((await attempt('198.51.100.7', owner.email, `guess-3`)).status).toBe(429);
      // The owner, from their own address, logs in with the right password...
      const ok = await attempt('192.0.2.44', owner.email, owner.password);
      expect(ok.status).toBe(200);
      expect(ok.body.access_token).toEqual(expect.any(String));
      // ...and a few typos of their own do not count against the stranger's block or the other way round.
      expect((await attempt('192.0.2.44', owner.email, 'typo')).status).toBe(400);
      expect((await attempt('192.0.2.44', owner.email, owner.password)).status).toBe(200);
      // Many strangers each get their own 3 failures, not more.
      for (const from of ['198.51.100.8', '198.51.100.9']) {
        for (let i = 0; i < 3; i++) expect((await attempt(from, owner.email, `g-${i}`)).status).toBe(400);
        expect((await attempt(from, owner.email, 'g-3')).status).toBe(429);
      }
      expect((await attempt('192.0.2.44', owner.email, owner.password)).status).toBe(200);
    });

    it('one address spraying many accounts hits the per-address limit (8 attempts)', async () => {
      const accounts = await Promise.all([gw.user(), gw.user(), gw.user()]);
      const results: number[] = [];
      for (let i = 0; i < 9; i++) {
        results.push((await attempt('198.51.100.99', accounts[i % 3]!.email, `spray-${i}`)).status);
      }
      expect(results.slice(0, 8).every((s) => s === 400)).toBe(true);
      expect(results[8]).toBe(429);
      // The accounts' owners elsewhere are not affected.
      for (const a of accounts) expect((await attempt('192.0.2.45', a.email, a.password)).status).toBe(200);
    });
  });

  describe('a client behind a proxy of one hop (SLUICE_TRUST_PROXY=1)', () => {
    let gw: TestGateway;
    let proxy: ForwardingProxy;
    beforeAll(async () => {
      gw = await startTestGateway(kind, { SLUICE_LOGIN_MAX_PER_ADDRESS: '5', SLUICE_TRUST_PROXY: '1' });
      proxy = await forwardingProxy(gw.app);
    });
    afterAll(async () => {
      await proxy.close();
      await gw.close();
    });

    it('cannot escape the login limit by forging X-Forwarded-For', async () => {
      const email = freshEmail('forger');
      expect((await gw.http.post('/api/auth/register').send({ email, password: PASSWORD })).status).toBe(201);
      const login = (forged: string, password: string) =>
        request(proxy.url)
          .post('/api/auth/jwt/login')
          .set('X-Forwarded-For', forged)
          .type('form')
          .send({ username: email, password });
      // A new made-up address every time: the gateway counts the address the proxy saw.
      for (let i = 0; i < 5; i++) {
        const res = await login(`203.0.113.${i + 1}`, `wrong-password-${i}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
      }
      for (const forged of ['203.0.113.6', '198.51.100.1, 192.0.2.1', 'unknown']) {
        const blocked = await login(forged, PASSWORD);
        expect(blocked.status).toBe(429);
        expect(blocked.body).toEqual({ detail: 'LOGIN_TOO_MANY_ATTEMPTS' });
        expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      }
      // A request the proxy forwards for another client (the address it appends) still gets in.
      const other = await gw.http
        .post('/api/auth/jwt/login')
        .set('X-Forwarded-For', '192.0.2.77')
        .type('form')
        .send({ username: email, password: PASSWORD });
      expect(other.status).toBe(200);
    });
  });

  describe('forgot-password and request-verify-token limits', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway(kind, {
        SLUICE_MAIL_MAX_PER_ACCOUNT: '2',
        SLUICE_MAIL_MAX_PER_ADDRESS: '6',
        // The proxy by address: the test connects from loopback.
        SLUICE_TRUST_PROXY: 'loopback',
      });
    });
    afterAll(() => gw.close());
    const post = (path: string, from: string, email: string) =>
      gw.http.post(`/api/auth/${path}`).set('X-Forwarded-For', from).send({ email });
    const mails = (email: string, subject: RegExp) =>
      gw.outbox().filter((m) => m.to === email.toLowerCase() && subject.test(m.subject)).length;

    for (const [path, subject] of [
      ['forgot-password', /reset/i],
      ['request-verify-token', /verif/i],
    ] as const) {
      it(`${path}: at most 2 mails per account, from any address, every answer 202`, async () => {
        const u = await gw.user();
        const before = mails(u.email, subject);
        for (const from of ['203.0.113.10', '203.0.113.11', '203.0.113.12', '203.0.113.13', '203.0.113.14']) {
          const res = await post(path, from, u.email);
          expect(res.status).toBe(202);
          expect(res.text).toBe('');
        }
        expect(mails(u.email, subject) - before).toBe(2);
        // An unknown address answers the same, so the limit reveals no account.
        const ghost = `ghost-${randomUUID()}@example.com`;
        for (const from of ['203.0.113.15', '203.0.113.16', '203.0.113.17']) {
          expect((await post(path, from, ghost)).status).toBe(202);
        }
        // Another account is unaffected.
        const other = await gw.user();
        const otherBefore = mails(other.email, subject);
        expect((await post(path, '203.0.113.18', other.email)).status).toBe(202);
        expect(mails(other.email, subject) - otherBefore).toBe(1);
      });

      it(`${path}: 429 with Retry-After past 6 requests from one address, whatever the accounts`, async () => {
        const from = `198.51.100.${path.length}`;
        for (let i = 0; i < 6; i++) {
          expect((await post(path, from, `spray-${i}-${randomUUID()}@example.com`)).status).toBe(202);
        }
        const res = await post(path, from, `spray-x-${randomUUID()}@example.com`);
        expect(res.status).toBe(429);
        expect(res.body).toEqual({ detail: 'TOO_MANY_REQUESTS' });
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        // Another address is not limited.
        const u = await gw.user();
        expect((await post(path, '192.0.2.200', u.email)).status).toBe(202);
      });
    }
  });
});
