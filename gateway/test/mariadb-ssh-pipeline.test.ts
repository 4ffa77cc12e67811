import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import type mysql from 'mysql2/promise';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import type { ScratchDatabase } from '@sluice/testing/postgres';
import { eventually, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import type { Bastion } from '@sluice/testing/sshd';
import { closeScanned, reachState, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';
import { startTunnelledDatabases, type TunnelledDatabases } from './tunnelled-databases.js';

// A MariaDB CDC → PostgreSQL pipeline whose source and target are both
// reached only through a real OpenSSH bastion (testing/src/sshd.ts), as a
// user drives it through the REST API under the embedded operator (real
// workers as processes, the real broker). Numbered rows are written in
// transactions while the pipeline is live; mid-stream the bastion is killed
// with every session through it: the workers stop with the tunnel's
// sentence (their connector's last termination, so the tunnel was in the
// path), are restarted by the process runtime once the bastion is back, and
// the target ends with every number exactly as written. Before and after the
// outage, every connection of the pipeline that each database sees comes
// from a process of the bastion's sshd: nothing went around the tunnel.

const ROWS = 6_000;
const PER_TRANSACTION = 100;
const OUTAGE_AT_ROWS = 1_500;

/** The command name of the process holding the TCP socket bound locally to 127.0.0.1:`port`. */
function processOfLocalPort(port: number): string | undefined {
  const local = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let inode: string | undefined;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(local) && fields[9] !== '0') inode = fields[9];
    }
  }
  if (!inode) return undefined;
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) {
          return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
        }
      }
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return undefined;
}

interface WorkerRead {
  restarts: number;
  last_termination: { message: string | null } | null;
}

describeWithKafka(
  'a MariaDB → PostgreSQL pipeline through an SSH bastion that restarts (REST, real workers)',
  () => {
    const run = randomUUID().slice(0, 8);
    const brokers = testKafkaBrokers() ?? [];
    const saved = { ...process.env };
    let dbs: TunnelledDatabases;
    let source: mysql.Connection;
    let target: ScratchDatabase;
    let bastion: Bastion;
    let database: string;
    let url: URL;
    let gw: TestGateway;
    let t: TeamSetup;

    beforeAll(async () => {
      dbs = await startTunnelledDatabases('cdc_ssh_api');
      ({ source, target, bastion, database, mariadb: url } = dbs);
      await source.query('create table numbered (id int primary key, label varchar(64) not null)');
      process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
      process.env.SLUICE_BATCH_LINGER_MS = '20';
      // A restart soon after the bastion is back; the first one, at once, may still find it down.
      process.env.SLUICE_WORKER_BACKOFF_BASE_MS = '3000';
      gw = await startTestGateway('pglite', {
        SLUICE_EMBEDDED_OPERATOR: 'true',
        SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
        SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
      });
      t = await setupTeam(gw, 'cdc-ssh-mariadb');
    });
    afterAll(async () => {
      if (gw) await closeScanned(gw);
      process.env = saved;
      await dbs?.close();
    });

    const label = (id: number) => `row ${id} · ${(id * 7919) % 100_003}`;
    const arrived = async () =>
      (
        await target.client
          .query<{ id: number; label: string }>(
            'select id::int as id, label from public.numbered_copy order by id',
          )
          .catch(() => ({ rows: [] as { id: number; label: string }[] }))
      ).rows;
    /** Which processes the pipeline's connections to each database come from (by their client ports). */
    const clientsOfDatabases = async () => {
      const [mariadb] = await source.query(
        'select host from information_schema.processlist where db = ? and id <> connection_id()',
        [database],
      );
      const postgres = await target.client.query<{ port: number }>(
        'select client_port as port from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      );
      const ports = {
        mariadb: (mariadb as { host: string }[]).map((r) => Number(r.host.split(':')[1])),
        postgres: postgres.rows.map((r) => r.port),
      };
      return {
        mariadb: ports.mariadb.map(processOfLocalPort),
        postgres: ports.postgres.map(processOfLocalPort),
      };
    };
    const throughBastion = async () => {
      const seen = await eventually(
        clientsOfDatabases,
        (c) => c.mariadb.length > 0 && c.postgres.length > 0,
        30_000,
      );
      expect(seen.mariadb.every((p) => p?.startsWith('sshd'))).toBe(true);
      expect(seen.postgres.every((p) => p?.startsWith('sshd'))).toBe(true);
      return seen;
    };
    const connector = async (id: string) =>
      (await gw.http.get(`/api/connectors/${id}`).set(t.owner.auth)).body as {
        status: string;
        worker: WorkerRead | null;
      };

    it('goes live through the tunnel and, across a bastion restart, delivers every numbered row', async () => {
      const tunnel = bastion.tunnelFields();
      const created = await gw.http
        .post('/api/pipelines/')
        .set(t.owner.auth)
        .send({
          name: `numbered-ssh-${run}`,
          team_id: t.teamId,
          source_name: `mariadb-ssh-${run}`,
          source_type: 'MARIADB_SOURCE',
          source_config: {
            host: '127.0.0.1',
            port: Number(url.port),
            user: decodeURIComponent(url.username),
            password: decodeURIComponent(url.password),
            // The connections' default database, so that the server lists them under it.
            database,
            ssl_mode: 'disabled',
            whitelist: [`${database}.numbered`],
            ...tunnel,
          },
          target_name: `pg-ssh-${run}`,
          target_type: 'POSTGRES_TARGET',
          target_config: {
            ...target.settings,
            // The test server trusts local connections; the connector schema wants a password anyway.
            password: target.settings.password || `unused-${run}`,
            schema: 'public',
            ...tunnel,
          },
          subscription_target_table_name: 'numbered_copy',
          subscription_backfill: true,
          subscription_mapper_config: [
            { key: 'id', path: 'id', cast: 'int', primary_key: true },
            { key: 'label', path: 'label' },
          ],
        });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const sourceId = created.body.source_connector_id as string;
      const targetId = created.body.target_connector_id as string;
      // The key is a secret: never returned.
      expect(created.body.source_config.ssh_private_key).toBe('<redacted>');

      await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth);
      await reachState(gw, t.owner, `/api/pipelines/${id}`, 'live', 120_000);

      let outage: Promise<string> | undefined;
      let before: Awaited<ReturnType<typeof throughBastion>> | undefined;
      for (let from = 1; from <= ROWS; from += PER_TRANSACTION) {
        const rows = Array.from({ length: PER_TRANSACTION }, (_, i) => [from + i, label(from + i)]);
        await source.query('insert into numbered (id, label) values ?', [rows]);
        if (!outage && from + PER_TRANSACTION > OUTAGE_AT_ROWS) {
          // Once rows are arriving through both tunnels, the bastion goes, and comes back once the
          // source's worker has said why it stopped; rows keep being written meanwhile.
          await eventually(arrived, (r) => r.length >= OUTAGE_AT_ROWS / 2, 120_000);
          before = await throughBastion();
          outage = (async () => {
            await bastion.stop();
            const said = await eventually(
              () => connector(sourceId),
              (c) => (c.worker?.restarts ?? 0) >= 1,
              60_000,
            );
            await bastion.start();
            return said.worker?.last_termination?.message ?? '';
          })();
        }
        await new Promise((r) => setTimeout(r, 30));
      }
      const stopped = await outage!;
      expect(stopped).toContain(`SSH bastion 127.0.0.1:${bastion.port}`);

      const all = await eventually(arrived, (r) => r.length === ROWS, 180_000);
      const wrong = all.filter((r, i) => r.id !== i + 1 || r.label !== label(r.id));
      expect(wrong.slice(0, 5)).toEqual([]);
      const after = await throughBastion();

      // Both back to live by themselves; the target's restart came from the same outage.
      await reachState(gw, t.owner, `/api/pipelines/${id}`, 'live', 60_000);
      const [src, tgt] = [await connector(sourceId), await connector(targetId)];
      console.info(
        `source restarts ${src.worker?.restarts}, target restarts ${tgt.worker?.restarts}; the source said: ${stopped}; ` +
          `connections from the bastion before the outage ${JSON.stringify(before)}, after ${JSON.stringify(after)}`,
      );
      expect(src.status).toBe('live');
      expect(tgt.status).toBe('live');
    }, 420_000);
  },
);
