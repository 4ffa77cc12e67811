import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { sql } from 'kysely';
import { pino } from 'pino';
import { EmbeddedCluster } from '@sluice/shared/cluster';
import { SLUICE_KINDS, type ClusterObject, type SluiceKind } from '@sluice/shared/ports';
import {
  readCursor,
  recordConsumedAtSwitch,
  tombstone,
  upsertObject,
} from '../src/mirror/mirror.repository.js';
import { MIRROR_TABLES } from '../src/mirror/projections.js';
import { MirrorSync, type MirrorSyncOptions } from '../src/mirror/sync.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

const TEAM = '7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0';
const REF = '11111111-2222-4333-8444-555555555555';
const errorTable = { enabled: false };

/** A valid spec of each kind, named `name`. */
const SPECS: Record<SluiceKind, (name: string) => Record<string, unknown>> = {
  Connector: (name) => ({
    name,
    teamId: TEAM,
    connectorType: 'KAFKA_SOURCE',
    configuration: { topic: 'orders' },
    desiredState: 'stopped',
  }),
  DataModel: (name) => ({
    name,
    teamId: TEAM,
    connectorId: REF,
    entry: 'public.orders',
    enabled: true,
    errorTable,
  }),
  Subscription: (name) => ({
    name,
    teamId: TEAM,
    datamodelId: REF,
    targetConnectorId: REF,
    targetTableName: 'orders',
    mapperConfig: [],
    consumerId: 'c1',
    backfill: false,
    enabled: true,
    errorTable,
  }),
  Pipeline: (name) => ({
    name,
    teamId: TEAM,
    sourceConnectorId: REF,
    targetConnectorId: REF,
    datamodelId: REF,
    subscriptionId: REF,
    ownsSource: false,
    ownsTarget: false,
    desiredState: 'draft',
    version: 1,
  }),
  Warehouse: (name) => ({ name, teamId: TEAM, serverHostname: 'dbx', httpPath: '/sql', accessToken: {} }),
};

/** The columns every mirror table has, as a test reads them. */
interface Row {
  id: string;
  namespace: string;
  name: string;
  resource_version: string;
  generation: string;
  deleting: boolean;
  deleted: boolean;
  created_at: Date;
  updated_at: Date;
  state?: string;
  desired_state?: string;
}

const log = pino({ level: 'silent' });

describe.each(databaseKinds())('mirror sync on %s', (dbKind) => {
  let gw: TestGateway;
  let ns: string;
  /** The sync that runs now: the gateway's, until a test restarts it. */
  let sync: MirrorSync;
  const extraSyncs: MirrorSync[] = [];

  beforeAll(async () => {
    gw = await startTestGateway(dbKind);
    ns = gw.ctx.config.namespace;
    sync = gw.ctx.mirror;
    await sync.settled();
  });
  afterAll(async () => {
    for (const s of extraSyncs) await s.stop();
    await gw?.close();
  });

  const newObject = (kind: SluiceKind, name = 'orders', opts: { namespace?: string; id?: string } = {}) => {
    const o: ClusterObject = gw.ctx.catalog.object(kind, SPECS[kind](name), { app: 'test' });
    if (opts.namespace) o.metadata.namespace = opts.namespace;
    if (opts.id) o.metadata.name = opts.id;
    return o;
  };
  /** Created as kubectl would: straight into the cluster, not through the gateway. */
  const createOutside = (kind: SluiceKind, name?: string, opts?: { namespace?: string; id?: string }) =>
    gw.ctx.cluster.create(newObject(kind, name, opts));

  async function row(kind: SluiceKind, id: string): Promise<Row | undefined> {
    const { rows } = await sql<Row>`
      select *, resource_version::text as resource_version, generation::text as generation
      from ${sql.table(MIRROR_TABLES[kind])} where id = ${id}`.execute(gw.ctx.db);
    return rows[0];
  }
  async function countIn(namespace: string): Promise<number> {
    let n = 0;
    for (const kind of SLUICE_KINDS) {
      const { rows } = await sql<{ n: string }>`
        select count(*)::text as n from ${sql.table(MIRROR_TABLES[kind])}
        where namespace = ${namespace}`.execute(gw.ctx.db);
      n += Number(rows[0]?.n);
    }
    return n;
  }

  /** Stops the running sync and makes the next one (not started), as a restarted gateway would. */
  async function restart(opts?: MirrorSyncOptions) {
    await sync.stop();
    const next = new MirrorSync(gw.ctx.db, gw.ctx.cluster, [ns], log, opts);
    extraSyncs.push(next);
    sync = next;
    return { next, relist: jest.spyOn(next, 'relist') };
  }

  describe('writes from outside the gateway', () => {
    it('mirrors an object of every kind created directly in the cluster', async () => {
      const created = await Promise.all(SLUICE_KINDS.map((k) => createOutside(k, `${k.toLowerCase()}-x`)));
      await sync.settled();
      for (const o of created) {
        const r = await row(o.kind, o.metadata.name);
        expect(r).toMatchObject({
          namespace: ns,
          name: `${o.kind.toLowerCase()}-x`,
          resource_version: o.metadata.resourceVersion,
          generation: '1',
          deleting: false,
          deleted: false,
        });
      }
      expect((await row('Connector', created[0]!.metadata.name))?.state).toBe('paused');
      expect((await row('Pipeline', created[3]!.metadata.name))?.state).toBe('draft');
      expect((await row('Warehouse', created[4]!.metadata.name))?.state).toBe('Draft');
    });

    it('follows status and spec patches: state moves, updated_at only with the spec', async () => {
      const c = await createOutside('Connector', 'patched');
      const id = c.metadata.name;
      await sync.settled();
      const first = (await row('Connector', id))!;
      expect(first.state).toBe('paused');

      await gw.ctx.cluster.patchStatus('Connector', ns, id, { state: 'building' });
      await sync.settled();
      const afterStatus = (await row('Connector', id))!;
      expect(afterStatus.state).toBe('building');
      expect(afterStatus.updated_at).toEqual(first.updated_at);

      await gw.ctx.cluster.patch('Connector', ns, id, { spec: { desiredState: 'running', name: 'renamed' } });
      await sync.settled();
      const afterSpec = (await row('Connector', id))!;
      expect(afterSpec).toMatchObject({ desired_state: 'running', name: 'renamed', generation: '2' });
      expect(afterSpec.state).toBe('building');
      expect(afterSpec.updated_at.getTime()).toBeGreaterThan(afterStatus.updated_at.getTime());
      expect(afterSpec.created_at).toEqual(first.created_at);

      await gw.ctx.cluster.patchStatus('Connector', ns, id, { state: 'live' });
      await sync.settled();
      const afterLive = (await row('Connector', id))!;
      expect(afterLive.state).toBe('live');
      expect(afterLive.updated_at).toEqual(afterSpec.updated_at);
    });

    it('tombstones an object deleted in the cluster, and shows it deleting while finalizers hold it', async () => {
      const plain = await createOutside('DataModel', 'doomed');
      const held = newObject('Pipeline', 'held');
      held.metadata.finalizers = ['sluice.dev/cleanup'];
      await gw.ctx.cluster.create(held);
      await sync.settled();

      await gw.ctx.cluster.delete('DataModel', ns, plain.metadata.name);
      await gw.ctx.cluster.delete('Pipeline', ns, held.metadata.name);
      await sync.settled();
      expect(await row('DataModel', plain.metadata.name)).toMatchObject({ deleted: true, deleting: true });
      expect(await row('Pipeline', held.metadata.name)).toMatchObject({ deleted: false, deleting: true });

      await gw.ctx.cluster.patch('Pipeline', ns, held.metadata.name, { metadata: { finalizers: null } });
      await sync.settled();
      expect(await row('Pipeline', held.metadata.name)).toMatchObject({ deleted: true, deleting: true });
    });

    it('leaves out objects of other namespaces and objects not named by a UUID', async () => {
      const elsewhere = await createOutside('Connector', 'elsewhere', { namespace: 'other-team' });
      const named = await createOutside('Warehouse', 'named', { id: 'not-a-uuid' });
      // A later write that is mirrored, so settling proves the two were passed over.
      const after = await createOutside('Connector', 'after');
      await sync.settled();
      expect(await row('Connector', after.metadata.name)).toBeDefined();
      expect(await row('Connector', elsewhere.metadata.name)).toBeUndefined();
      expect(await countIn('other-team')).toBe(0);
      const { rows } = await sql`select 1 from mirror_warehouses where name = 'named'`.execute(gw.ctx.db);
      expect(rows).toHaveLength(0);
      expect(named.metadata.name).toBe('not-a-uuid');
    });

    it('settles when the last write was of another kind (cluster-wide resourceVersion)', async () => {
      // Only Warehouse gets an event: the other kinds' loops see nothing newer.
      const w = await createOutside('Warehouse', 'last-write');
      await sync.settled(3_000);
      expect(await row('Warehouse', w.metadata.name)).toBeDefined();
    });

    it('brings back an object deleted and created again with the same name (kubectl delete + apply)', async () => {
      const o = await createOutside('Connector', 'again');
      const id = o.metadata.name;
      await sync.settled();
      await gw.ctx.cluster.delete('Connector', ns, id);
      await sync.settled();
      expect(await row('Connector', id)).toMatchObject({ deleted: true });

      const again = await createOutside('Connector', 'again-2', { id });
      await sync.settled();
      expect(await row('Connector', id)).toMatchObject({
        deleted: false,
        deleting: false,
        name: 'again-2',
        resource_version: again.metadata.resourceVersion,
      });
    });
  });

  describe('writes through the gateway', () => {
    it('shows its own writes at once, without waiting for the sync', async () => {
      const created = await gw.ctx.catalog.create(newObject('Subscription', 'mine'));
      const id = created.metadata.name;
      expect(await row('Subscription', id)).toMatchObject({
        name: 'mine',
        resource_version: created.metadata.resourceVersion,
        deleted: false,
      });

      const patched = await gw.ctx.catalog.patch('Subscription', id, { spec: { name: 'mine-2' } });
      expect(await row('Subscription', id)).toMatchObject({
        name: 'mine-2',
        resource_version: patched.metadata.resourceVersion,
      });

      await gw.ctx.catalog.delete('Subscription', id);
      expect(await row('Subscription', id)).toMatchObject({ deleted: true });
      // …and the sync, arriving later with the same events, agrees.
      await sync.settled();
      expect(await row('Subscription', id)).toMatchObject({ deleted: true });
    });

    it('hides an object held by finalizers as deleting at once', async () => {
      const o = newObject('Connector', 'held-by-gateway');
      o.metadata.finalizers = ['sluice.dev/cleanup'];
      const created = await gw.ctx.catalog.create(o);
      await gw.ctx.catalog.delete('Connector', created.metadata.name);
      expect(await row('Connector', created.metadata.name)).toMatchObject({ deleting: true, deleted: false });
    });
  });

  describe('version guard', () => {
    it("notes when a subscription's backfill is switched on after its creation, not when it is born with it", async () => {
      const bornOn = newObject('Subscription', 'born-on');
      (bornOn.spec as { backfill: boolean }).backfill = true;
      const on = await gw.ctx.cluster.create(bornOn);
      const off = await createOutside('Subscription', 'born-off');
      const id = off.metadata.name;
      await sync.settled();
      const mirrored = () =>
        gw.ctx.db
          .selectFrom('mirror_subscriptions')
          .select(['backfill_on_at', 'backfill_on_consumed'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
      const switchedAt = async () => (await mirrored()).backfill_on_at;
      expect((await row('Subscription', on.metadata.name)) as unknown).toMatchObject({
        backfill_on_at: null,
      });
      expect(await switchedAt()).toBeNull();
      const patch = async (spec: object) => {
        await gw.ctx.cluster.patch('Subscription', ns, id, { spec });
        await sync.settled();
      };
      await patch({ backfill: true });
      const first = await switchedAt();
      expect(first).toBeInstanceOf(Date);
      // Another change that leaves it on keeps the time; off and on again moves it.
      await patch({ targetTableName: 'orders_v2' });
      expect(await switchedAt()).toEqual(first);
      // What the backfill runner found at a switch (the consumer's offsets) holds until the next one.
      const consumed = async () => (await mirrored()).backfill_on_consumed;
      expect(await consumed()).toBeNull();
      await gw.ctx.db
        .updateTable('mirror_subscriptions')
        .set({ backfill_on_consumed: true })
        .where('id', '=', id)
        .execute();
      await patch({ targetTableName: 'orders_v3' });
      expect(await consumed()).toBe(true);
      await patch({ backfill: false });
      expect(await switchedAt()).toEqual(first);
      expect(await consumed()).toBe(true);
      await patch({ backfill: true });
      expect((await switchedAt())!.getTime()).toBeGreaterThan(first!.getTime());
      expect(await consumed()).toBeNull();
      // The runner's record of a look: for this switch only, and the first look wins.
      const { at } = await sql<{ at: string }>`select backfill_on_at::text as at from mirror_subscriptions
        where id = ${id}`
        .execute(gw.ctx.db)
        .then((r) => r.rows[0]!);
      const stale = new Date(first!.getTime()).toISOString();
      expect(await recordConsumedAtSwitch(gw.ctx.db, id, stale, true)).toBe(false);
      expect(await consumed()).toBeNull();
      expect(await recordConsumedAtSwitch(gw.ctx.db, id, at, false)).toBe(true);
      expect(await recordConsumedAtSwitch(gw.ctx.db, id, at, true)).toBe(false);
      expect(await consumed()).toBe(false);
    });

    it('keeps the newer row when an older version arrives late', async () => {
      const v1 = await gw.ctx.catalog.create(newObject('Connector', 'v1'));
      const id = v1.metadata.name;
      const v2 = await gw.ctx.cluster.patch<ClusterObject>('Connector', ns, id, { spec: { name: 'v2' } });
      await upsertObject(gw.ctx.db, v2);
      await upsertObject(gw.ctx.db, v1);
      expect(await row('Connector', id)).toMatchObject({
        name: 'v2',
        resource_version: v2.metadata.resourceVersion,
        generation: '2',
      });
    });

    it('does not resurrect a tombstone with a stale upsert', async () => {
      const v1 = await gw.ctx.catalog.create(newObject('Warehouse', 'gone'));
      const id = v1.metadata.name;
      await gw.ctx.catalog.delete('Warehouse', id);
      await upsertObject(gw.ctx.db, v1);
      expect(await row('Warehouse', id)).toMatchObject({ deleted: true });
      await sync.settled();
      await upsertObject(gw.ctx.db, v1);
      expect(await row('Warehouse', id)).toMatchObject({ deleted: true });
    });

    it('keeps a deletion the sync applied when the write-through of the create arrives after it', async () => {
      const created = await createOutside('DataModel', 'racy');
      await gw.ctx.cluster.delete('DataModel', ns, created.metadata.name);
      // Mirrored only by the sync, after the two events above: once it shows,
      // the sync has applied them.
      const marker = await createOutside('DataModel', 'marker');
      await sync.settled();
      expect(await row('DataModel', marker.metadata.name)).toBeDefined();
      expect(await row('DataModel', created.metadata.name)).toMatchObject({ deleted: true });

      await upsertObject(gw.ctx.db, created);
      expect(await row('DataModel', created.metadata.name)).toMatchObject({ deleted: true });
    });
  });

  describe('ids across namespaces', () => {
    it('keeps a live id for its namespace; the tombstone of one is taken over by the other namespace', async () => {
      const holder = await gw.ctx.catalog.create(newObject('Connector', 'holder'));
      const id = holder.metadata.name;
      const later = String(BigInt(holder.metadata.resourceVersion!) + 100n);
      const twin: ClusterObject = {
        ...holder,
        metadata: { ...holder.metadata, namespace: 'team-b', resourceVersion: later },
        spec: { ...(holder.spec as object), name: 'twin' },
      };
      // A newer version of another namespace's object neither replaces nor deletes the holder.
      await upsertObject(gw.ctx.db, twin);
      await tombstone(gw.ctx.db, twin);
      expect(await row('Connector', id)).toMatchObject({ namespace: ns, name: 'holder', deleted: false });

      await gw.ctx.catalog.delete('Connector', id);
      expect(await row('Connector', id)).toMatchObject({ namespace: ns, deleted: true });
      // Versions order one object's writes: an older version of the other takes the freed id all the same.
      await upsertObject(gw.ctx.db, { ...twin, metadata: { ...twin.metadata, resourceVersion: '1' } });
      expect(await row('Connector', id)).toMatchObject({ namespace: 'team-b', name: 'twin', deleted: false });
      // …and from then on its own versions order it.
      await upsertObject(gw.ctx.db, { ...holder, spec: { ...(holder.spec as object), name: 'stale' } });
      expect(await row('Connector', id)).toMatchObject({ namespace: 'team-b', name: 'twin' });
    });
  });

  describe('restart', () => {
    it('resumes from the stored cursor without relisting', async () => {
      await sync.settled();
      const keep = await createOutside('Connector', 'keep');
      const drop = await createOutside('Connector', 'drop');
      await sync.settled();
      const { next, relist } = await restart();
      const before = await readCursor(gw.ctx.db, 'Connector', ns);
      expect(before).toBeDefined();
      // While no sync runs: a create, a modify, a status report, a delete
      // through the gateway of an object the mirror never saw, and a delete.
      const created = await createOutside('Connector', 'while-down');
      const modified = await gw.ctx.cluster.patch<ClusterObject>('Connector', ns, keep.metadata.name, {
        spec: { name: 'keep-2' },
      });
      await gw.ctx.cluster.patchStatus('Connector', ns, keep.metadata.name, { state: 'live' });
      const unseen = await createOutside('Connector', 'unseen');
      await gw.ctx.catalog.delete('Connector', unseen.metadata.name);
      expect(await row('Connector', unseen.metadata.name)).toMatchObject({ deleted: true });
      await gw.ctx.cluster.delete('Connector', ns, drop.metadata.name);
      expect(await row('Connector', created.metadata.name)).toBeUndefined();
      expect(await row('Connector', keep.metadata.name)).toMatchObject({ name: 'keep', state: 'paused' });
      expect(await readCursor(gw.ctx.db, 'Connector', ns)).toBe(before);
      const { resourceVersion: last } = await gw.ctx.cluster.list('Connector', ns);

      next.start();
      await next.settled();
      expect(relist).not.toHaveBeenCalled();
      expect(await row('Connector', created.metadata.name)).toMatchObject({
        name: 'while-down',
        deleted: false,
      });
      expect(await row('Connector', keep.metadata.name)).toMatchObject({
        name: 'keep-2',
        state: 'live',
        generation: String(modified.metadata.generation),
      });
      expect(await row('Connector', drop.metadata.name)).toMatchObject({ deleted: true });
      // Replaying its ADDED did not bring back the object the gateway deleted.
      expect(await row('Connector', unseen.metadata.name)).toMatchObject({ deleted: true });
      expect(await readCursor(gw.ctx.db, 'Connector', ns)).toBe(last);
    });

    it('moves the cursor of a kind without writes, so a restart after compaction resumes', async () => {
      const { next: first } = await restart({ cursorSaveMs: 0 });
      first.start();
      for (let i = 0; i < 3; i++) await createOutside('Connector', `busy-${i}`);
      await first.settled();
      const { resourceVersion: last } = await gw.ctx.cluster.list('Connector', ns);
      // Only Connectors had events: the other kinds' cursors get here by bookmarks.
      const deadline = Date.now() + 5_000;
      for (const kind of SLUICE_KINDS) {
        while ((await readCursor(gw.ctx.db, kind, ns)) !== last) {
          if (Date.now() > deadline) throw new Error(`the ${kind} cursor did not follow the bookmarks`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }

      const { next: second, relist } = await restart();
      await new EmbeddedCluster(gw.ctx.db, { retainEvents: 1 }).compact();
      second.start();
      await second.settled();
      const w = await createOutside('Warehouse', 'after-compaction');
      await second.settled();
      expect(await row('Warehouse', w.metadata.name)).toMatchObject({ name: 'after-compaction' });
      expect(relist).not.toHaveBeenCalled();
    });

    it('relists when the stored cursor is older than the retained history', async () => {
      await sync.settled();
      const survivor = await createOutside('Pipeline', 'survivor');
      const victim = await createOutside('Pipeline', 'victim');
      await sync.settled();
      const { next, relist } = await restart();
      const stale = BigInt((await readCursor(gw.ctx.db, 'Pipeline', ns))!);
      await gw.ctx.cluster.delete('Pipeline', ns, victim.metadata.name);
      for (let i = 1; i <= 5; i++) {
        await gw.ctx.cluster.patch('Pipeline', ns, survivor.metadata.name, { spec: { version: i + 1 } });
      }
      await gw.ctx.cluster.patchStatus('Pipeline', ns, survivor.metadata.name, { state: 'building' });
      const born = await createOutside('Pipeline', 'born-while-down');
      // Also objects of other kinds, so every kind's cursor falls behind.
      for (const kind of SLUICE_KINDS) await createOutside(kind, 'filler');
      const horizon = BigInt(await new EmbeddedCluster(gw.ctx.db, { retainEvents: 2 }).compact());
      expect(horizon).toBeGreaterThan(stale);

      next.start();
      await next.settled();
      expect(relist).toHaveBeenCalledWith('Pipeline', ns);
      expect(await row('Pipeline', victim.metadata.name)).toMatchObject({ deleted: true });
      expect(await row('Pipeline', survivor.metadata.name)).toMatchObject({
        state: 'building',
        generation: '6',
      });
      expect(await row('Pipeline', born.metadata.name)).toMatchObject({
        name: 'born-while-down',
        deleted: false,
      });
      const { resourceVersion } = await gw.ctx.cluster.list('Pipeline', ns);
      expect(await readCursor(gw.ctx.db, 'Pipeline', ns)).toBe(resourceVersion);

      // And it watches from there on.
      await gw.ctx.cluster.patchStatus('Pipeline', ns, survivor.metadata.name, { state: 'live' });
      await next.settled();
      expect(await row('Pipeline', survivor.metadata.name)).toMatchObject({ state: 'live' });
    });

    it('mirrors every namespace in cluster scope (SLUICE_WATCH_NAMESPACES=*), with one cursor per kind', async () => {
      await sync.stop();
      const all = new MirrorSync(gw.ctx.db, gw.ctx.cluster, undefined, log);
      extraSyncs.push(all);
      sync = all;
      const far = await createOutside('Connector', 'far-away', { namespace: 'team-z' });
      all.start();
      await all.settled();
      expect(await row('Connector', far.metadata.name)).toMatchObject({
        namespace: 'team-z',
        deleted: false,
      });
      const { resourceVersion } = await gw.ctx.cluster.list('Connector');
      expect(await readCursor(gw.ctx.db, 'Connector', '*')).toBe(resourceVersion);
    });
  });
});
