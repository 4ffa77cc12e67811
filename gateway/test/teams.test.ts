import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

describe.each(databaseKinds())('teams and members on %s', (kind) => {
  let gw: TestGateway;
  let owner: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  let envId: string;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    [owner, member, outsider] = [await gw.user(), await gw.user(), await gw.user()];
    envId = (await gw.http.post('/api/envs/').set(owner.auth).send({ name: 'team-env' })).body.id;
  });
  afterAll(() => gw.close());

  const createTeam = (u: TestUser, name: string, query = '') =>
    gw.http
      .post(`/api/teams/${query}`)
      .set(u.auth)
      .send({ name, description: `${name} team` });

  it('creates a team in the active environment with the creator as owner', async () => {
    const res = await createTeam(owner, 'data');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'data', description: 'data team', env_id: envId });
    const members = await gw.http.get(`/api/teams/${res.body.id}/members`).set(owner.auth);
    expect(members.body).toEqual([{ id: owner.id, email: owner.email, role: 'owner' }]);
  });

  it('needs an environment: none active and no env_id is a 422, a foreign env is a 403', async () => {
    const res = await createTeam(outsider, 'nowhere');
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['query', 'env_id']);
    const foreign = await createTeam(outsider, 'intruder', `?env_id=${envId}`);
    expect(foreign.status).toBe(403);
    expect(typeof foreign.body.detail).toBe('string');
  });

  it('refuses a duplicate name in one environment and allows it in another', async () => {
    await createTeam(owner, 'dup');
    expect((await createTeam(owner, 'dup')).status).toBe(409);
    const other = (await gw.http.post('/api/envs/').set(owner.auth).send({ name: 'other-env' })).body.id;
    expect((await createTeam(owner, 'dup', `?env_id=${other}`)).status).toBe(201);
  });

  it('lets only owners add members, who then see the team and its environment', async () => {
    const team = (await createTeam(owner, 'ingest')).body;
    const byOutsider = await gw.http
      .post(`/api/teams/${team.id}/members/bulk`)
      .set(outsider.auth)
      .send({ members: [outsider.id] });
    expect(byOutsider.status).toBe(403);
    expect((await gw.http.get(`/api/teams/${team.id}`).set(member.auth)).status).toBe(403);
    const add = await gw.http
      .post(`/api/teams/${team.id}/members/bulk`)
      .set(owner.auth)
      .send({ members: [member.id] });
    expect(add.status).toBe(204);
    expect((await gw.http.get(`/api/teams/${team.id}`).set(member.auth)).body.name).toBe('ingest');
    expect((await gw.http.get(`/api/envs/${envId}`).set(member.auth)).status).toBe(200);
    const members = await gw.http.get(`/api/teams/${team.id}/members`).set(member.auth);
    expect(members.body).toEqual(
      expect.arrayContaining([
        { id: owner.id, email: owner.email, role: 'owner' },
        { id: member.id, email: member.email, role: 'member' },
      ]),
    );
    // A member without the owner role cannot add anyone.
    const byMember = await gw.http
      .post(`/api/teams/${team.id}/members/bulk`)
      .set(member.auth)
      .send({ members: [outsider.id] });
    expect(byMember.status).toBe(403);
    // Adding twice is harmless.
    expect(
      (
        await gw.http
          .post(`/api/teams/${team.id}/members/bulk`)
          .set(owner.auth)
          .send({ members: [member.id] })
      ).status,
    ).toBe(204);
    expect((await gw.http.get(`/api/teams/${team.id}/members`).set(owner.auth)).body).toHaveLength(2);
  });

  it('rejects unknown users and malformed bodies with locations', async () => {
    const team = (await createTeam(owner, 'strict')).body;
    const unknown = await gw.http
      .post(`/api/teams/${team.id}/members/bulk`)
      .set(owner.auth)
      .send({ members: [member.id, crypto.randomUUID()] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toEqual([
      { loc: ['body', 'members', 1], msg: 'Unknown user', type: 'value_error' },
    ]);
    expect((await gw.http.get(`/api/teams/${team.id}/members`).set(owner.auth)).body).toHaveLength(1);
    const malformed = await gw.http
      .post(`/api/teams/${team.id}/members/bulk`)
      .set(owner.auth)
      .send({ members: ['nope'] });
    expect(malformed.status).toBe(422);
    expect(malformed.body.detail[0].loc).toEqual(['body', 'members', 0]);
  });

  it('lists only the caller’s teams, all of them for the environment admin', async () => {
    // Joining a team made its environment the member's active one.
    const mine = await gw.http.get('/api/teams/').set(member.auth);
    expect(mine.body.items.map((t: { name: string }) => t.name)).toEqual(['ingest']);
    const scoped = await gw.http.get(`/api/teams/?env_id=${envId}`).set(member.auth);
    expect(scoped.status).toBe(200);
    expect(scoped.body.items.map((t: { name: string }) => t.name)).toEqual(['ingest']);
    const all = await gw.http.get('/api/teams/').set(owner.auth);
    expect(all.body.total).toBeGreaterThanOrEqual(4);
    expect((await gw.http.get(`/api/teams/?env_id=${envId}`).set(outsider.auth)).status).toBe(403);
  });

  it('finds a team by name, renames and deletes it as owner only', async () => {
    const team = (await createTeam(owner, 'rename-me')).body;
    const found = await gw.http.get('/api/teams/filter-one?name=rename-me').set(owner.auth);
    expect(found.body.id).toBe(team.id);
    expect((await gw.http.get('/api/teams/filter-one?name=missing').set(owner.auth)).status).toBe(404);
    expect((await gw.http.patch(`/api/teams/${team.id}`).set(outsider.auth).send({ name: 'x' })).status).toBe(
      403,
    );
    const renamed = await gw.http.patch(`/api/teams/${team.id}`).set(owner.auth).send({ name: 'renamed' });
    expect(renamed.body.name).toBe('renamed');
    expect((await gw.http.patch(`/api/teams/${team.id}`).set(owner.auth).send({ name: 'data' })).status).toBe(
      409,
    );
    expect((await gw.http.delete(`/api/teams/${team.id}`).set(outsider.auth)).status).toBe(403);
    expect((await gw.http.delete(`/api/teams/${team.id}`).set(owner.auth)).status).toBe(204);
    expect((await gw.http.get(`/api/teams/${team.id}`).set(owner.auth)).status).toBe(404);
  });

  it('removes members: owners remove anyone, members leave, the last owner stays', async () => {
    const team = (await createTeam(owner, 'leavers')).body;
    await gw.http
      .post(`/api/teams/${team.id}/members/bulk`)
      .set(owner.auth)
      .send({ members: [member.id, outsider.id] });
    expect(
      (await gw.http.delete(`/api/teams/${team.id}/members/${outsider.id}`).set(member.auth)).status,
    ).toBe(403);
    expect((await gw.http.delete(`/api/teams/${team.id}/members/${member.id}`).set(member.auth)).status).toBe(
      204,
    );
    expect(
      (await gw.http.delete(`/api/teams/${team.id}/members/${outsider.id}`).set(owner.auth)).status,
    ).toBe(204);
    expect(
      (await gw.http.delete(`/api/teams/${team.id}/members/${outsider.id}`).set(owner.auth)).status,
    ).toBe(404);
    const last = await gw.http.delete(`/api/teams/${team.id}/members/${owner.id}`).set(owner.auth);
    expect(last.status).toBe(409);
    expect((await gw.http.get(`/api/teams/${team.id}/members`).set(owner.auth)).body).toEqual([
      { id: owner.id, email: owner.email, role: 'owner' },
    ]);
  });

  it('replays team creation with the same Idempotency-Key', async () => {
    const a = await gw.http
      .post('/api/teams/')
      .set(owner.auth)
      .set('Idempotency-Key', 'k-team')
      .send({ name: 'once' });
    const b = await gw.http
      .post('/api/teams/')
      .set(owner.auth)
      .set('Idempotency-Key', 'k-team')
      .send({ name: 'once' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.id).toBe(a.body.id);
  });
});
