import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { configs, closeScanned, kafkaPipeline, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, type TestGateway, type TestUser } from './harness.js';
import { logStreamServer, specProtocols as spec } from './log-stream-client.js';
import { startScriptedGateway, untilBody, type ScriptedGateway } from './scripted-gateway.js';

// The worker logs of spec 4.4/4.5, end to end: the gateway with its embedded
// operator runs the scripted fixture worker as a child process (it prints a
// JSON line at each step); GET /connectors/{id}/logs and the WebSocket streams
// are read by a real HTTP client and a real WebSocket client on a listening
// server. The same on Kubernetes: logs.kube.test.ts.

describe('worker logs: GET /connectors/{id}/logs and the WebSocket streams (spec 4.4, 4.5)', () => {
  let gw: TestGateway;
  let t: TeamSetup;
  let script: ScriptedGateway['script'];
  let streams: Awaited<ReturnType<typeof logStreamServer>>;
  const open = (path: string, protocols: string[]) => streams.open(path, protocols);
  let pipelineId: string;
  let source: string;
  let target: string;

  const until = (path: string, test: (body: Record<string, unknown>) => boolean, ms = 20_000) =>
    untilBody(gw, t.owner.auth, path, test, ms);
  const live = (path: string) => until(path, (b) => (b.state ?? b.status) === 'live');

  beforeAll(async () => {
    ({ gw, script } = await startScriptedGateway());
    t = await setupTeam(gw, 'logs');
    streams = await logStreamServer(gw.app);

    const res = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send(kafkaPipeline('logged', t.teamId));
    expect(res.status).toBe(201);
    pipelineId = res.body.id as string;
    const p = (await gw.http.get(`/api/pipelines/${pipelineId}`).set(t.owner.auth)).body;
    source = p.source_connector_id as string;
    target = p.target_connector_id as string;
    script(source, 'ready');
    script(target, 'ready');
    expect((await gw.http.post(`/api/pipelines/${pipelineId}/start`).set(t.owner.auth)).status).toBe(202);
    await live(`/api/pipelines/${pipelineId}`);
  });

  afterAll(async () => {
    await streams.close();
    // The tokens the clients sent never reach a log line.
    for (const u of [t.owner, t.member, t.outsider]) {
      expect(gw.recorded().logs.find((l) => l.includes(u.token))).toBeUndefined();
    }
    await closeScanned(gw);
  });

  it("GET answers the worker's last lines as JSON, `tail` bounded", async () => {
    const res = await gw.http.get(`/api/connectors/${source}/logs`).set(t.member.auth);
    expect(res.status).toBe(200);
    const lines = res.body.lines as string[];
    const parsed = lines.map((l) => JSON.parse(l) as { worker: string; msg: string });
    expect(parsed).toContainEqual({
      worker: `${gw.ctx.config.namespace}/${source}`,
      msg: 'started with ready',
    });
    expect(parsed.map((l) => l.msg)).toContain('ready');

    const one = await gw.http.get(`/api/connectors/${source}/logs?tail=1`).set(t.owner.auth);
    expect(one.body.lines).toEqual([lines[lines.length - 1]]);
    const tooMany = await gw.http.get(`/api/connectors/${source}/logs?tail=5001`).set(t.owner.auth);
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0].loc).toEqual(['query', 'tail']);
  });

  it('GET: 403 for a non-member, 404 for an unknown connector, 401 without a token, empty when no worker runs', async () => {
    const outsider = await gw.http.get(`/api/connectors/${source}/logs`).set(t.outsider.auth);
    expect(outsider.status).toBe(403);
    expect(typeof outsider.body.detail).toBe('string');
    const unknown = await gw.http
      .get('/api/connectors/00000000-0000-4000-8000-000000000000/logs')
      .set(t.owner.auth);
    expect(unknown.status).toBe(404);
    expect((await gw.http.get(`/api/connectors/${source}/logs`)).status).toBe(401);

    const idle = await gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .send({
        name: 'idle',
        team_id: t.teamId,
        connector_type: 'KAFKA_SOURCE',
        json_configuration: configs.kafkaSource('idle-topic'),
      });
    const res = await gw.http.get(`/api/connectors/${idle.body.id}/logs`).set(t.owner.auth);
    expect([res.status, res.body]).toEqual([200, { lines: [] }]);
  });

  it("a pipeline's stream with the spec's subprotocols: both workers' tail, tagged, then live across a restart", async () => {
    const c = open(`/pipelines/${pipelineId}/logs`, spec(t.member.token));
    await c.opened;
    // The server chose the marker subprotocol, never the token.
    expect(c.ws.protocol).toBe('Authorization');
    await c.until((f) => f.side === 'source' && f.line.includes('started with ready'));
    await c.until((f) => f.side === 'target' && f.line.includes('started with ready'));
    const before = c.frames.length;

    // Lines printed after the client connected: pausing stops both workers (each logs it) ...
    expect((await gw.http.post(`/api/pipelines/${pipelineId}/pause`).set(t.owner.auth)).status).toBe(202);
    await c.until((f) => f.side === 'source' && f.line.includes('"stopping"'));
    await c.until((f) => f.side === 'target' && f.line.includes('"stopping"'));
    await until(`/api/pipelines/${pipelineId}`, (b) => b.state === 'paused');
    // ... and the workers of the resumed pipeline are new runs: the same stream goes on with them.
    expect((await gw.http.post(`/api/pipelines/${pipelineId}/start`).set(t.owner.auth)).status).toBe(202);
    await live(`/api/pipelines/${pipelineId}`);
    for (const side of ['source', 'target'] as const) {
      const after = () =>
        c.frames
          .slice(before)
          .filter((f) => f.side === side)
          .map((f) => f.line);
      await c.until(() => after().some((l) => l.includes('started with ready')));
      // Each line once: the restart did not replay the earlier run.
      expect(after().filter((l) => l.includes('"stopping"'))).toHaveLength(1);
    }
    c.ws.close();
    expect((await c.closed).code).toBe(1005);
  });

  it("a connector's stream: the browser-safe `bearer.<token>` form, untagged lines, a line printed later", async () => {
    const c = open(`/connectors/${target}/logs?tail=1`, ['Authorization', `bearer.${t.owner.token}`]);
    await c.opened;
    expect(c.ws.protocol).toBe('Authorization');
    const first = await c.until(() => true);
    expect(first.side).toBeUndefined();
    expect(JSON.parse(first.line)).toMatchObject({ worker: `${gw.ctx.config.namespace}/${target}` });
    await new Promise((r) => setTimeout(r, 300));
    expect(c.frames).toHaveLength(1); // tail=1
    expect((await gw.http.post(`/api/connectors/${target}/stop`).set(t.owner.auth)).status).toBe(202);
    await c.until((f) => f.line.includes('"stopping"'));
    c.ws.close(1000);
    expect((await c.closed).code).toBe(1000);
  });

  it('a wrong or missing token, a non-member, an unknown id: closed with 1008 (policy violation)', async () => {
    const cases = [
      [`/pipelines/${pipelineId}/logs`, spec('not-a-token'), 'Unauthorized'],
      [`/pipelines/${pipelineId}/logs`, spec(`${t.owner.token}x`), 'Unauthorized'],
      [`/connectors/${source}/logs`, ['Authorization'], 'Unauthorized'],
      [`/pipelines/${pipelineId}/logs`, spec(t.outsider.token), 'You are not a member of this team'],
      [`/connectors/${source}/logs`, spec(t.stranger.token), 'You are not a member of this team'],
      ['/pipelines/00000000-0000-4000-8000-000000000000/logs', spec(t.owner.token), 'Pipeline not found'],
      // 36 characters of a UUID's alphabet that are no UUID: refused before the database reads it.
      [`/connectors/${'-'.repeat(36)}/logs`, spec(t.owner.token), 'Not Found'],
      [`/connectors/${source}/nothing`, spec(t.owner.token), 'No such stream'],
    ] as const;
    for (const [path, protocols, reason] of cases) {
      const c = open(path, [...protocols]);
      const closed = await c.closed;
      expect([path, closed]).toEqual([path, { code: 1008, reason }]);
      expect(c.frames).toEqual([]);
    }
  });
});

describe.each(databaseKinds())('log streams end when the caller loses access, on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let streams: Awaited<ReturnType<typeof logStreamServer>>;
  let connectorId: string;
  let pipelineId: string;

  beforeAll(async () => {
    // The default re-check interval (2 s): what a deployment gets.
    ({ gw } = await startScriptedGateway(kind));
    t = await setupTeam(gw, 'revoked');
    streams = await logStreamServer(gw.app);
    // A stream stays open while no worker runs: no pipeline needs to be started.
    const res = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send(kafkaPipeline('watched', t.teamId));
    expect(res.status).toBe(201);
    pipelineId = res.body.id as string;
    connectorId = (await gw.http.get(`/api/pipelines/${pipelineId}`).set(t.owner.auth)).body
      .source_connector_id as string;
  });

  afterAll(async () => {
    await streams.close();
    await closeScanned(gw);
  });

  /** Opens both streams with `token` and checks they stay open for a moment. */
  async function openBoth(token: string) {
    const clients = [
      streams.open(`/connectors/${connectorId}/logs`, spec(token)),
      streams.open(`/pipelines/${pipelineId}/logs`, spec(token)),
    ];
    for (const c of clients) await c.opened;
    const early = await Promise.race([
      Promise.all(clients.map((c) => c.closed)),
      new Promise((r) => setTimeout(() => r('open'), 2500)),
    ]);
    expect(early).toBe('open');
    return clients;
  }

  /** Both streams close with 1008 and `reason` within the re-check interval (and some slack). */
  async function expectClosed(clients: ReturnType<typeof streams.open>[], reason: string) {
    const started = Date.now();
    for (const c of clients) {
      const closed = await Promise.race([
        c.closed,
        new Promise((r) => setTimeout(() => r('still open'), 8000)),
      ]);
      expect(closed).toEqual({ code: 1008, reason });
    }
    return Date.now() - started;
  }

  const freshMember = async (): Promise<TestUser> => {
    const u = await gw.user();
    const add = await gw.http
      .post(`/api/teams/${t.teamId}/members/bulk`)
      .set(t.owner.auth)
      .send({ members: [u.id] });
    expect(add.status).toBe(204);
    return u;
  };

  it('logout closes the streams opened with that token (1008), within the re-check interval', async () => {
    const u = await freshMember();
    const clients = await openBoth(u.token);
    expect((await gw.http.post('/api/auth/jwt/logout').set(u.auth)).status).toBe(200);
    expect(await expectClosed(clients, 'Unauthorized')).toBeLessThan(5000);
  });

  it('a password change made with another token closes the streams', async () => {
    const u = await freshMember();
    const other = await gw.login(u.email, u.password);
    const clients = await openBoth(u.token);
    const changed = await gw.http
      .post('/api/users/me/change-password')
      .set({ Authorization: `Bearer ${other}` })
      .send({ old_password: u.password, new_password: 'new-password-for-logs' });
    expect(changed.status).toBe(200);
    await expectClosed(clients, 'Unauthorized');
  });

  it('removal from the team closes the streams', async () => {
    const u = await freshMember();
    const clients = await openBoth(u.token);
    expect((await gw.http.delete(`/api/teams/${t.teamId}/members/${u.id}`).set(t.owner.auth)).status).toBe(
      204,
    );
    await expectClosed(clients, 'You are not a member of this team');
  });

  it('deactivation by a superuser closes the streams', async () => {
    const u = await freshMember();
    const root = await gw.superuser();
    const clients = await openBoth(u.token);
    expect((await gw.http.patch(`/api/users/${u.id}`).set(root.auth).send({ is_active: false })).status).toBe(
      200,
    );
    await expectClosed(clients, 'Unauthorized');
  });

  it('a member who keeps access keeps the stream', async () => {
    const clients = await openBoth(t.member.token);
    await new Promise((r) => setTimeout(r, 3000));
    for (const c of clients) expect(c.ws.readyState).toBe(c.ws.OPEN);
    for (const c of clients) c.ws.close(1000);
    for (const c of clients) expect((await c.closed).code).toBe(1000);
  });
});
