import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createConnector, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import type { TestGateway } from './harness.js';
import { closeChecked, closedPort, poster, startPreflightGateway } from './preflight-fixtures.js';

// ORACLE_TARGET: no Oracle server runs here, so the real thin client is
// pointed at what a user may mistype — a closed port, a TCP service that is
// not an Oracle listener, a denied address — and each answer must say so in
// one sentence, quickly, without a stack trace or the password.

const run = randomUUID().slice(0, 8);
const ORACLE_PASSWORD = `oracle-s3cret-${run}`;

describe('pre-flight check of an Oracle target (real thin client, no Oracle server)', () => {
  let gw: TestGateway;
  let t: TeamSetup;
  const servers: Server[] = [];
  const received: number[] = [];
  let accepted = 0;

  /** A local TCP server that runs `onConnection`; its port. */
  async function tcpServer(onConnection: (socket: Socket) => void): Promise<number> {
    const server = createServer((socket) => {
      accepted++;
      socket.on('data', (chunk) => received.push(chunk.length));
      socket.on('error', () => undefined);
      onConnection(socket);
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return (server.address() as AddressInfo).port;
  }

  // Starting a gateway (PGlite) takes long on a loaded machine.
  beforeAll(async () => {
    gw = await startPreflightGateway();
    t = await setupTeam(gw, 'preflight-oracle');
  }, 90_000);
  afterAll(async () => {
    for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
    // Neither an answer nor a log line carries a stack trace or the driver's raw text.
    const { bodies, logs } = gw.recorded();
    const raw = /\n\s+at |CONNECTION_ID|NJS-\d+: /;
    expect([...bodies, ...logs].filter((line) => raw.test(line))).toEqual([]);
    await closeChecked(gw, [ORACLE_PASSWORD]);
  });

  const post = poster(
    () => gw,
    () => t,
  );
  const cfg = (port: number | string, host = '127.0.0.1') => ({
    database: 'FREEPDB1',
    user: 'sluice',
    password: ORACLE_PASSWORD,
    host,
    port: String(port),
    server_name: 'oracle-1',
    server_id: '1',
  });
  /** The answer of a check that ran and failed: one sentence, no trace, no password. */
  const failed = (res: { status: number; body: { ok?: unknown; message?: unknown } }) => {
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    const message = String(res.body.message);
    expect(message).not.toMatch(/\n|\s+at \S+ \(|CONNECTION_ID|NJS-068: invalid/);
    expect(message).not.toContain(ORACLE_PASSWORD);
    return message;
  };

  it('says "could not connect" at once when nothing listens on the port', async () => {
    const port = await closedPort();
    const started = Date.now();
    const message = failed(await post('oracle-target/check-credentials', cfg(port)));
    expect(message).toBe(
      `Could not connect to Oracle at 127.0.0.1:${port}: connection refused (nothing listens there)`,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('says the peer is not an Oracle listener when it closes the connection or answers garbage', async () => {
    const closes = await tcpServer((socket) => socket.destroy());
    expect(failed(await post('oracle-target/check-credentials', cfg(closes)))).toBe(
      `127.0.0.1:${closes} closed the connection during the Oracle handshake: is an Oracle listener there? (NJS-500)`,
    );
    // Answers the connect packet with a packet of an unknown type.
    const garbage = await tcpServer((socket) =>
      socket.once('data', () =>
        socket.write(Buffer.from([0, 16, 0, 0, 99, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8])),
      ),
    );
    expect(failed(await post('oracle-target/check-credentials', cfg(garbage)))).toBe(
      `127.0.0.1:${garbage} did not answer with the Oracle network protocol (NJS-068)`,
    );
    // The real client reached both, and sent its connect packet to the one that waited for it.
    expect(accepted).toBe(2);
    expect(received.length).toBeGreaterThanOrEqual(1);
  });

  it('denies an address the policy refuses, before any connection', async () => {
    const message = failed(await post('oracle-target/check-credentials', cfg(1521, '169.254.169.254')));
    expect(message).toMatch(/169\.254\.169\.254 are not allowed/);
    const refused = failed(
      await post('oracle-target/check-credentials', { ...cfg(1521), database: 'X)(HOST=evil' }),
    );
    expect(refused).toMatch(/^The database \(service name\) may hold only/);
  });

  it('checks a stored connector with ?connector_id=: its stored password and address', async () => {
    const closes = await tcpServer((socket) => socket.destroy());
    const c = await createConnector(gw, t.owner, t.teamId, `oracle-${run}`, 'ORACLE_TARGET', cfg(closes));
    // `<redacted>` needs the stored value: without connector_id the body is refused.
    const unresolved = await post('oracle-target/check-credentials', {
      ...cfg(closes),
      password: '<redacted>',
    });
    expect(unresolved.status).toBe(422);
    expect(unresolved.body.detail[0].loc).toEqual(['body', 'password']);
    const redacted = await post(
      `oracle-target/check-credentials?connector_id=${c.id}`,
      { ...cfg(closes), password: '<redacted>' },
      t.member.auth,
    );
    expect(failed(redacted)).toMatch(new RegExp(`^127\\.0\\.0\\.1:${closes} closed the connection`));
    // An empty body checks the stored configuration whole (its host and port).
    const stored = await post(`oracle-target/check-credentials?connector_id=${c.id}`, {});
    expect(failed(stored)).toMatch(new RegExp(`^127\\.0\\.0\\.1:${closes} closed`));
    const outsider = await post(`oracle-target/check-credentials?connector_id=${c.id}`, {}, t.outsider.auth);
    expect(outsider.status).toBe(403);
  });
});
