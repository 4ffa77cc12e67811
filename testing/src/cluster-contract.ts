import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AlreadyExistsError,
  ConflictError,
  NotFoundError,
  SLUICE_KINDS,
  type ClusterObject,
  type ClusterPort,
  type ObjectMeta,
  type SluiceKind,
  type WatchEvent,
} from '@sluice/shared/ports';

/**
 * The contract of the cluster port (shared/src/ports/cluster.ts): what every
 * adapter — the embedded store and the Kubernetes API server — must do, with
 * observable assertions only. An adapter's test file calls
 * `describeClusterContract('name', setup)`; `setup` gives a cluster in which
 * the sluice.dev kinds exist. Tests share that cluster and keep apart by
 * using a namespace each, so the suite also runs against a real API server
 * that other things write to.
 */
export function describeClusterContract(
  name: string,
  setup: () => Promise<{ cluster: ClusterPort; teardown(): Promise<void> }>,
): void {
  describe(`cluster contract: ${name}`, () => {
    let cluster: ClusterPort;
    let teardown: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      ({ cluster, teardown } = await setup());
    });
    afterAll(async () => {
      await teardown?.();
    });

    describe('ping and adapter', () => {
      it('answers ping and names its adapter', async () => {
        await expect(cluster.ping()).resolves.toBeUndefined();
        expect(['embedded', 'kubernetes']).toContain(cluster.adapter);
      });
    });

    describe('create', () => {
      it('sets uid, creationTimestamp, generation 1 and a resourceVersion, and ignores status', async () => {
        const ns = namespace();
        const before = Date.now();
        const created = await cluster.create<ClusterObject>({
          ...object(ns, 'alpha', { host: 'db', ports: [5432] }),
          metadata: {
            name: 'alpha',
            namespace: ns,
            labels: { 'sluice.dev/team': 'core' },
            annotations: { 'sluice.dev/note': 'hello world' },
            finalizers: ['sluice.dev/cleanup'],
          },
          status: { phase: 'live' },
        });
        expect(created).toMatchObject({
          apiVersion: API_VERSION,
          kind: 'Connector',
          metadata: {
            name: 'alpha',
            namespace: ns,
            generation: 1,
            labels: { 'sluice.dev/team': 'core' },
            annotations: { 'sluice.dev/note': 'hello world' },
            finalizers: ['sluice.dev/cleanup'],
          },
          spec: { host: 'db', ports: [5432] },
        });
        expect(created.metadata.uid).toMatch(
          /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
        );
        expect(created.metadata.resourceVersion).toMatch(/^\d+$/);
        const createdAt = Date.parse(created.metadata.creationTimestamp ?? '');
        expect(createdAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
        expect(createdAt).toBeLessThanOrEqual(Date.now());
        expect(created.metadata.deletionTimestamp).toBeUndefined();
        // Status is written only through the status subresource.
        expect(created.status).toBeUndefined();
        expect(await cluster.get('Connector', ns, 'alpha')).toEqual(created);
      });

      it('gives every object its own uid and a larger resourceVersion', async () => {
        const ns = namespace();
        const a = await cluster.create(object(ns, 'a'));
        const b = await cluster.create(object(ns, 'b'));
        expect(a.metadata.uid).not.toEqual(b.metadata.uid);
        expect(rv(b)).toBeGreaterThan(rv(a));
      });

      it('refuses a taken (kind, namespace, name) with AlreadyExistsError and keeps the first', async () => {
        const ns = namespace();
        const first = await cluster.create(object(ns, 'taken', { v: 1 }));
        await expect(cluster.create(object(ns, 'taken', { v: 2 }))).rejects.toBeInstanceOf(
          AlreadyExistsError,
        );
        expect(await cluster.get('Connector', ns, 'taken')).toEqual(first);
        // The same name is free in another kind and in another namespace.
        await expect(cluster.create(object(ns, 'taken', {}, {}, 'Pipeline'))).resolves.toBeDefined();
        await expect(cluster.create(object(namespace(), 'taken'))).resolves.toBeDefined();
      });

      it('refuses a kind outside the five and names that are not DNS-1123', async () => {
        const ns = namespace();
        const bad = { ...object(ns, 'fine'), kind: 'Secret' } as unknown as ClusterObject;
        await expect(cluster.create(bad)).rejects.toThrow();
        for (const name of ['Upper', 'under_score', '-lead', 'trail-', '', 'a b', 'x'.repeat(254)]) {
          await expect(cluster.create(object(ns, name))).rejects.toThrow();
        }
        expect((await cluster.list('Connector', ns)).items).toEqual([]);
        // Our names: UUIDs and lowercase words.
        const uuid = randomUUID();
        await expect(cluster.create(object(ns, uuid))).resolves.toBeDefined();
        await expect(cluster.create(object(ns, 'orders-db.v2'))).resolves.toBeDefined();
      });

      it('accepts every one of the five kinds', async () => {
        const ns = namespace();
        for (const kind of SLUICE_KINDS) {
          const created = await cluster.create(object(ns, 'same', { kind }, {}, kind));
          expect(created.kind).toBe(kind);
          expect((await cluster.get(kind, ns, 'same'))?.spec).toEqual({ kind });
        }
      });
    });

    describe('get and list', () => {
      it('get answers undefined for a missing object', async () => {
        const ns = namespace();
        await cluster.create(object(ns, 'present'));
        expect(await cluster.get('Connector', ns, 'absent')).toBeUndefined();
        expect(await cluster.get('Pipeline', ns, 'present')).toBeUndefined();
        expect(await cluster.get('Connector', namespace(), 'present')).toBeUndefined();
      });

      it('lists one kind in one namespace, sorted by name, with the current revision', async () => {
        const ns = namespace();
        const other = namespace();
        for (const n of ['charlie', 'alpha', 'b-x', 'bravo', 'b.x', '0-zero'])
          await cluster.create(object(ns, n));
        await cluster.create(object(ns, 'pipeline', {}, {}, 'Pipeline'));
        const elsewhere = await cluster.create(object(other, 'delta'));
        const list = await cluster.list('Connector', ns);
        // Byte order, as etcd keeps keys.
        expect(list.items.map((o) => o.metadata.name)).toEqual([
          '0-zero',
          'alpha',
          'b-x',
          'b.x',
          'bravo',
          'charlie',
        ]);
        expect(list.items.every((o) => o.kind === 'Connector' && o.metadata.namespace === ns)).toBe(true);
        expect(list.resourceVersion).toMatch(/^\d+$/);
        expect(BigInt(list.resourceVersion)).toBeGreaterThanOrEqual(rv(elsewhere));
        const empty = await cluster.list('Warehouse', namespace());
        expect(empty.items).toEqual([]);
        expect(BigInt(empty.resourceVersion)).toBeGreaterThanOrEqual(BigInt(list.resourceVersion));
      });

      it('lists across namespaces when none is given, by namespace then name', async () => {
        const [ns1, ns2] = [namespace(), namespace()].sort();
        const kind: SluiceKind = 'Warehouse';
        await cluster.create(object(ns2 as string, 'a', {}, {}, kind));
        await cluster.create(object(ns1 as string, 'b', {}, {}, kind));
        await cluster.create(object(ns1 as string, 'a', {}, {}, kind));
        const ours = (await cluster.list(kind)).items.filter((o) =>
          [ns1, ns2].includes(o.metadata.namespace),
        );
        expect(ours.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
          `${ns1}/a`,
          `${ns1}/b`,
          `${ns2}/a`,
        ]);
      });

      it('filters by label selector: k=v, k==v, k!=v, k, !k and comma-AND', async () => {
        const ns = namespace();
        await cluster.create(object(ns, 'a', {}, { labels: { team: 'core', tier: 'gold' } }));
        await cluster.create(object(ns, 'b', {}, { labels: { team: 'core' } }));
        await cluster.create(object(ns, 'c', {}, { labels: { team: 'edge', tier: 'gold' } }));
        await cluster.create(object(ns, 'd'));
        const names = async (selector: string) =>
          (await cluster.list('Connector', ns, selector)).items.map((o) => o.metadata.name);
        expect(await names('team=core')).toEqual(['a', 'b']);
        expect(await names('team==core')).toEqual(['a', 'b']);
        expect(await names('team!=core')).toEqual(['c', 'd']);
        expect(await names('tier')).toEqual(['a', 'c']);
        expect(await names('!tier')).toEqual(['b', 'd']);
        expect(await names('team=core,tier=gold')).toEqual(['a']);
        expect(await names('team=core, tier')).toEqual(['a']);
        expect(await names('team=nobody')).toEqual([]);
        expect(await names('')).toEqual(['a', 'b', 'c', 'd']);
      });
    });

    describe('resourceVersion', () => {
      it('is one strictly increasing counter over every write of every kind and object', async () => {
        const ns = namespace();
        const versions: bigint[] = [];
        const a = await cluster.create(object(ns, 'a'));
        versions.push(rv(a));
        versions.push(rv(await cluster.create(object(ns, 'b', {}, {}, 'DataModel'))));
        versions.push(rv(await cluster.patch('Connector', ns, 'a', { spec: { x: 1 } })));
        versions.push(rv(await cluster.patchStatus('DataModel', ns, 'b', { phase: 'ready' })));
        versions.push(rv(await cluster.create(object(ns, 'c', {}, {}, 'Subscription'))));
        for (let i = 1; i < versions.length; i++) {
          expect(versions[i]).toBeGreaterThan(versions[i - 1] as bigint);
        }
        const list = await cluster.list('Connector', ns);
        expect(BigInt(list.resourceVersion)).toBeGreaterThanOrEqual(versions[versions.length - 1] as bigint);
      });
    });

    describe('update', () => {
      it('replaces labels, annotations, finalizers and spec; generation moves with the spec; status stays', async () => {
        const ns = namespace();
        const created = await cluster.create(
          object(
            ns,
            'u',
            { a: 1, nested: { keep: true } },
            { labels: { x: '1', y: '2' }, annotations: { n: 'o' } },
          ),
        );
        const withStatus = await cluster.patchStatus('Connector', ns, 'u', { phase: 'live' });
        const updated = await cluster.update({
          ...withStatus,
          metadata: {
            ...withStatus.metadata,
            labels: { z: '3' },
            annotations: {},
            finalizers: ['sluice.dev/f'],
          },
          spec: { b: 2 },
          status: { phase: 'ignored' },
        });
        expect(updated.metadata.labels).toEqual({ z: '3' });
        expect(updated.metadata.annotations ?? {}).toEqual({});
        expect(updated.metadata.finalizers).toEqual(['sluice.dev/f']);
        expect(updated.spec).toEqual({ b: 2 });
        expect(updated.metadata.generation).toBe(2);
        expect(updated.status).toEqual({ phase: 'live' });
        expect(updated.metadata.uid).toBe(created.metadata.uid);
        expect(updated.metadata.creationTimestamp).toBe(created.metadata.creationTimestamp);
        expect(rv(updated)).toBeGreaterThan(rv(withStatus));
        expect(await cluster.get('Connector', ns, 'u')).toEqual(updated);
      });

      it('keeps the generation when only metadata changes, and compares specs deeply', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 'm', { a: 1, b: { c: [1, 2] } }));
        const relabelled = await cluster.update({
          ...created,
          metadata: { ...created.metadata, labels: { l: 'v' } },
        });
        expect(relabelled.metadata.generation).toBe(1);
        expect(rv(relabelled)).toBeGreaterThan(rv(created));
        // The same spec with its keys in another order is the same spec.
        const reordered = await cluster.update({ ...relabelled, spec: { b: { c: [1, 2] }, a: 1 } });
        expect(reordered.metadata.generation).toBe(1);
        const changed = await cluster.update({ ...reordered, spec: { a: 1, b: { c: [2, 1] } } });
        expect(changed.metadata.generation).toBe(2);
      });

      it('writes nothing when nothing changes', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 'same', { a: 1 }, { labels: { l: 'v' } }));
        const again = await cluster.update({ ...created });
        expect(again.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
        expect(await cluster.get('Connector', ns, 'same')).toEqual(created);
      });

      it('refuses a stale resourceVersion with ConflictError and changes nothing', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 'c', { v: 1 }));
        const current = await cluster.update({ ...created, spec: { v: 2 } });
        await expect(cluster.update({ ...created, spec: { v: 3 } })).rejects.toBeInstanceOf(ConflictError);
        expect(await cluster.get('Connector', ns, 'c')).toEqual(current);
      });

      it('lets exactly one of several concurrent updates from the same read win', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 'race', { v: 0 }));
        const results = await Promise.allSettled(
          [1, 2, 3, 4, 5].map((v) => cluster.update({ ...created, spec: { v } })),
        );
        const won = results.filter((r) => r.status === 'fulfilled');
        const lost = results.filter((r) => r.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost.every((r) => r.reason instanceof ConflictError)).toBe(true);
        const stored = await cluster.get('Connector', ns, 'race');
        expect(stored).toEqual((won[0] as PromiseFulfilledResult<ClusterObject>).value);
        expect(stored?.metadata.generation).toBe(2);
      });

      it('throws NotFoundError for a missing object', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 'here'));
        await expect(
          cluster.update({ ...created, metadata: { ...created.metadata, name: 'not-here' } }),
        ).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('patch (JSON merge patch of metadata and spec)', () => {
      it('merges labels, annotations and spec, null removing; arrays replace whole; status is ignored', async () => {
        const ns = namespace();
        await cluster.create(
          object(
            ns,
            'p',
            { host: 'a', opts: { ssl: true, port: 1 }, tables: ['t1', 't2'] },
            { labels: { keep: '1', drop: '2' }, annotations: { a: '1' } },
          ),
        );
        await cluster.patchStatus('Connector', ns, 'p', { phase: 'live' });
        const patched = await cluster.patch('Connector', ns, 'p', {
          metadata: { labels: { drop: null, add: '3' }, annotations: { b: '2' } },
          spec: { opts: { port: null, timeout: 5 }, tables: ['t3'] },
          status: { phase: 'hijacked' },
        });
        expect(patched.metadata.labels).toEqual({ keep: '1', add: '3' });
        expect(patched.metadata.annotations).toEqual({ a: '1', b: '2' });
        expect(patched.spec).toEqual({ host: 'a', opts: { ssl: true, timeout: 5 }, tables: ['t3'] });
        expect(patched.status).toEqual({ phase: 'live' });
        expect(patched.metadata.generation).toBe(2);
        expect(await cluster.get('Connector', ns, 'p')).toEqual(patched);
      });

      it('keeps the generation for a metadata-only patch and writes nothing for an empty one', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 'p', { a: 1 }));
        const labelled = await cluster.patch('Connector', ns, 'p', { metadata: { labels: { x: 'y' } } });
        expect(labelled.metadata.generation).toBe(1);
        expect(rv(labelled)).toBeGreaterThan(rv(created));
        const same = await cluster.patch('Connector', ns, 'p', {
          spec: { a: 1 },
          metadata: { labels: { x: 'y' } },
        });
        expect(same.metadata.resourceVersion).toBe(labelled.metadata.resourceVersion);
      });

      it('replaces the finalizer list whole', async () => {
        const ns = namespace();
        await cluster.create(object(ns, 'f', {}, { finalizers: ['sluice.dev/a', 'sluice.dev/b'] }));
        const patched = await cluster.patch('Connector', ns, 'f', {
          metadata: { finalizers: ['sluice.dev/c'] },
        });
        expect(patched.metadata.finalizers).toEqual(['sluice.dev/c']);
      });

      it('treats a resourceVersion in the patch as a precondition', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 'pre', { v: 1 }));
        const moved = await cluster.patch('Connector', ns, 'pre', { spec: { v: 2 } });
        await expect(
          cluster.patch('Connector', ns, 'pre', {
            metadata: { resourceVersion: created.metadata.resourceVersion },
            spec: { v: 3 },
          }),
        ).rejects.toBeInstanceOf(ConflictError);
        const ok = await cluster.patch('Connector', ns, 'pre', {
          metadata: { resourceVersion: moved.metadata.resourceVersion },
          spec: { v: 3 },
        });
        expect(ok.spec).toEqual({ v: 3 });
      });

      it('throws NotFoundError for a missing object', async () => {
        await expect(cluster.patch('Connector', namespace(), 'nothing', { spec: {} })).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });
    });

    describe('patchStatus', () => {
      it('merges into status only: generation unchanged, resourceVersion moves, spec untouched', async () => {
        const ns = namespace();
        const created = await cluster.create(object(ns, 's', { want: 'running' }));
        const first = await cluster.patchStatus('Connector', ns, 's', {
          phase: 'building',
          conditions: [{ type: 'Ready', status: 'False' }],
        });
        expect(first.status).toEqual({ phase: 'building', conditions: [{ type: 'Ready', status: 'False' }] });
        expect(first.metadata.generation).toBe(1);
        expect(rv(first)).toBeGreaterThan(rv(created));
        expect(first.spec).toEqual({ want: 'running' });
        const second = await cluster.patchStatus('Connector', ns, 's', {
          phase: 'live',
          observedGeneration: 1,
        });
        expect(second.status).toEqual({
          phase: 'live',
          observedGeneration: 1,
          conditions: [{ type: 'Ready', status: 'False' }],
        });
        expect(rv(second)).toBeGreaterThan(rv(first));
        expect(second.metadata.generation).toBe(1);
        const removed = await cluster.patchStatus('Connector', ns, 's', { conditions: null });
        expect(removed.status).toEqual({ phase: 'live', observedGeneration: 1 });
        expect(await cluster.get('Connector', ns, 's')).toEqual(removed);
      });

      it('throws NotFoundError for a missing object', async () => {
        await expect(
          cluster.patchStatus('Connector', namespace(), 'nothing', { phase: 'x' }),
        ).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('delete and finalizers', () => {
      it('removes an object without finalizers at once, with a DELETED event carrying its last state', async () => {
        const ns = namespace();
        const start = await cluster.list('Connector', ns);
        const watch = startWatch(cluster, 'Connector', start.resourceVersion, ns);
        await cluster.create(object(ns, 'gone', { last: true }, { labels: { l: 'v' } }));
        const last = await cluster.patchStatus('Connector', ns, 'gone', { phase: 'live' });
        await cluster.delete('Connector', ns, 'gone');
        expect(await cluster.get('Connector', ns, 'gone')).toBeUndefined();
        expect((await cluster.list('Connector', ns)).items).toEqual([]);
        await watch.until((events) => events.length === 3);
        await watch.stop();
        const deleted = watch.events[2] as WatchEvent;
        expect(deleted.type).toBe('DELETED');
        expect(deleted.object).toMatchObject({
          metadata: { name: 'gone', uid: last.metadata.uid, labels: { l: 'v' } },
          spec: { last: true },
          status: { phase: 'live' },
        });
        expect(rv(deleted.object)).toBeGreaterThan(rv(last));
      });

      it('with finalizers, only marks for deletion until the last finalizer is removed', async () => {
        const ns = namespace();
        const start = await cluster.list('Connector', ns);
        const watch = startWatch(cluster, 'Connector', start.resourceVersion, ns);
        const created = await cluster.create(
          object(ns, 'held', { v: 1 }, { finalizers: ['sluice.dev/a', 'sluice.dev/b'] }),
        );
        await cluster.delete('Connector', ns, 'held');
        const marked = await cluster.get('Connector', ns, 'held');
        expect(marked?.metadata.deletionTimestamp).toEqual(expect.any(String));
        expect(Date.parse(marked?.metadata.deletionTimestamp ?? '')).not.toBeNaN();
        expect(rv(marked as ClusterObject)).toBeGreaterThan(rv(created));
        // As the API server's markAsDeleting: the desired state changed to "gone".
        expect(marked?.metadata.generation).toBe(2);

        // Deleting again while terminating changes nothing.
        await cluster.delete('Connector', ns, 'held');
        expect(await cluster.get('Connector', ns, 'held')).toEqual(marked);
        await expect(
          cluster.patch('Connector', ns, 'held', {
            metadata: { finalizers: ['sluice.dev/a', 'sluice.dev/b', 'sluice.dev/new'] },
          }),
        ).rejects.toThrow();

        const one = await cluster.update({
          ...(marked as ClusterObject),
          metadata: { ...(marked as ClusterObject).metadata, finalizers: ['sluice.dev/b'] },
        });
        expect(one.metadata.finalizers).toEqual(['sluice.dev/b']);
        expect(one.metadata.deletionTimestamp).toBe(marked?.metadata.deletionTimestamp);
        expect(await cluster.get('Connector', ns, 'held')).toEqual(one);

        await cluster.update({ ...one, metadata: { ...one.metadata, finalizers: [] } });
        expect(await cluster.get('Connector', ns, 'held')).toBeUndefined();
        await watch.until((events) => events.at(-1)?.type === 'DELETED');
        await watch.stop();
        expect(watch.events[0]?.type).toBe('ADDED');
        expect(watch.events[1]).toMatchObject({
          type: 'MODIFIED',
          object: { metadata: { deletionTimestamp: marked?.metadata.deletionTimestamp } },
        });
        expect(watch.events.filter((e) => e.type === 'DELETED')).toHaveLength(1);
        expect(watch.events.at(-1)?.object.metadata.uid).toBe(created.metadata.uid);

        // The name is free again, for a new object.
        const reborn = await cluster.create(object(ns, 'held'));
        expect(reborn.metadata.uid).not.toBe(created.metadata.uid);
        expect(reborn.metadata.generation).toBe(1);
      });

      it('also deletes when a patch removes the last finalizer', async () => {
        const ns = namespace();
        await cluster.create(object(ns, 'pf', {}, { finalizers: ['sluice.dev/only'] }));
        await cluster.delete('Connector', ns, 'pf');
        expect(await cluster.get('Connector', ns, 'pf')).toBeDefined();
        await cluster.patch('Connector', ns, 'pf', { metadata: { finalizers: null } });
        expect(await cluster.get('Connector', ns, 'pf')).toBeUndefined();
      });

      it('throws NotFoundError for a missing object', async () => {
        await expect(cluster.delete('Connector', namespace(), 'nothing')).rejects.toBeInstanceOf(
          NotFoundError,
        );
        const ns = namespace();
        await cluster.create(object(ns, 'once'));
        await cluster.delete('Connector', ns, 'once');
        await expect(cluster.delete('Connector', ns, 'once')).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('watch', () => {
      it('delivers every later event of its kind, in order and exactly once, until aborted', async () => {
        const ns = namespace();
        await cluster.create(object(ns, 'before'));
        const start = await cluster.list('Connector', ns);
        const watch = startWatch(cluster, 'Connector', start.resourceVersion, ns);
        const written: ClusterObject[] = [];
        written.push(await cluster.create(object(ns, 'w', { v: 1 })));
        await cluster.create(object(ns, 'other-kind', {}, {}, 'Pipeline'));
        written.push(await cluster.patch('Connector', ns, 'w', { spec: { v: 2 } }));
        written.push(await cluster.patchStatus('Connector', ns, 'w', { phase: 'live' }));
        await cluster.delete('Connector', ns, 'w');
        await cluster.delete('Connector', ns, 'before');
        await watch.until((events) => events.length >= 5);
        // Nothing more arrives late.
        await sleep(300);
        await watch.stop();
        expect(watch.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
          'ADDED w',
          'MODIFIED w',
          'MODIFIED w',
          'DELETED w',
          'DELETED before',
        ]);
        expect(watch.events.slice(0, 3).map((e) => e.object)).toEqual(written);
        expect(watch.events.every((e) => e.object.kind === 'Connector')).toBe(true);
        expectIncreasing(watch.events.map((e) => rv(e.object)));
      });

      it('resumes from any delivered version without repeating or skipping', async () => {
        const ns = namespace();
        const start = await cluster.list('DataModel', ns);
        for (const n of ['a', 'b', 'c', 'd']) await cluster.create(object(ns, n, {}, {}, 'DataModel'));
        const first = startWatch(cluster, 'DataModel', start.resourceVersion, ns);
        await first.until((events) => events.length === 4);
        await first.stop();
        const second = startWatch(
          cluster,
          'DataModel',
          first.events[1]?.object.metadata.resourceVersion ?? '',
          ns,
        );
        await second.until((events) => events.length >= 2);
        await cluster.create(object(ns, 'e', {}, {}, 'DataModel'));
        await second.until((events) => events.length >= 3);
        await sleep(200);
        await second.stop();
        expect(second.events.map((e) => e.object.metadata.name)).toEqual(['c', 'd', 'e']);
      });

      it('awaits an async handler before delivering the next event', async () => {
        const ns = namespace();
        const start = await cluster.list('Subscription', ns);
        for (const n of ['a', 'b', 'c']) await cluster.create(object(ns, n, {}, {}, 'Subscription'));
        let running = 0;
        let most = 0;
        const seen: string[] = [];
        const ac = watchController();
        const done = cluster.watch(
          'Subscription',
          start.resourceVersion,
          async (e) => {
            if (e.object.metadata.namespace !== ns) return;
            running++;
            most = Math.max(most, running);
            await sleep(30);
            seen.push(e.object.metadata.name);
            running--;
          },
          ac.signal,
        );
        await waitFor(() => seen.length === 3);
        ac.abort();
        await done;
        expect(most).toBe(1);
        expect(seen).toEqual(['a', 'b', 'c']);
      });

      it('resolves promptly when aborted while idle', async () => {
        const start = await cluster.list('Warehouse', namespace());
        const ac = watchController();
        const done = cluster.watch('Warehouse', start.resourceVersion, () => undefined, ac.signal);
        await sleep(50);
        const t0 = Date.now();
        ac.abort();
        await expect(done).resolves.toBeUndefined();
        expect(Date.now() - t0).toBeLessThan(2000);
      });

      it('never shows a later revision before an earlier one under concurrent writers', async () => {
        const ns = namespace();
        const start = await cluster.list('Pipeline', ns);
        const watch = startWatch(cluster, 'Pipeline', start.resourceVersion, ns);
        const created = await Promise.all(
          Array.from({ length: 50 }, (_, i) => cluster.create(object(ns, `p${i}`, { i }, {}, 'Pipeline'))),
        );
        await watch.until((events) => events.length >= 50);
        await sleep(300);
        await watch.stop();
        const delivered = watch.events.map((e) => rv(e.object));
        // Strictly increasing, so no revision came after a larger one; and the
        // very set the writers got, so none was skipped while it was in flight.
        expectIncreasing(delivered);
        expect(delivered).toEqual(created.map(rv).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        expect(new Set(created.map((o) => o.metadata.resourceVersion)).size).toBe(50);
      });
    });

    describe('copies', () => {
      it('returns fresh objects: mutating what goes in or comes out changes nothing stored', async () => {
        const ns = namespace();
        const input = object(ns, 'copy', { list: [1], deep: { a: 1 } }, { labels: { l: 'v' } });
        const created = await cluster.create(input);
        (input.spec as { list: number[] }).list.push(2);
        (input.metadata.labels as Record<string, string>).l = 'changed';
        (created.spec as { deep: { a: number } }).deep.a = 2;
        (created.metadata.labels as Record<string, string>).extra = 'x';
        const got = await cluster.get('Connector', ns, 'copy');
        expect(got?.spec).toEqual({ list: [1], deep: { a: 1 } });
        expect(got?.metadata.labels).toEqual({ l: 'v' });
        (got?.spec as { list: number[] }).list.length = 0;
        const listed = (await cluster.list('Connector', ns)).items[0];
        expect(listed?.spec).toEqual({ list: [1], deep: { a: 1 } });
        (listed?.metadata as ObjectMeta).name = 'renamed';
        expect((await cluster.get('Connector', ns, 'copy'))?.metadata.name).toBe('copy');
      });
    });
  });
}

const API_VERSION = 'sluice.dev/v1alpha1';

let namespaces = 0;
/** A namespace of the test's own (DNS-1123 label). */
function namespace(): string {
  return `ct${++namespaces}-${randomUUID().slice(0, 8)}`;
}

function object(
  ns: string,
  name: string,
  spec: Record<string, unknown> = {},
  meta: Partial<ObjectMeta> = {},
  kind: SluiceKind = 'Connector',
): ClusterObject<Record<string, unknown>> {
  return { apiVersion: API_VERSION, kind, metadata: { name, namespace: ns, ...meta }, spec };
}

function rv(o: ClusterObject): bigint {
  return BigInt(o.metadata.resourceVersion ?? 'x');
}

function expectIncreasing(versions: bigint[]): void {
  for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1] as bigint);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function waitFor(
  condition: () => boolean,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export interface TestWatch {
  events: WatchEvent[];
  done: Promise<void>;
  until(condition: (events: WatchEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Watches still running. A test that fails between `startWatch` and `stop`
 * would leave its watch reconnecting forever, and jest (in band on two cores)
 * would then never exit; every file that imports this module stops them
 * after each test.
 */
const running = new Set<AbortController>();
afterEach(() => {
  for (const ac of running) ac.abort();
  running.clear();
});

/** An abort controller for a watch, aborted after the test if it is not before. */
function watchController(): AbortController {
  const ac = new AbortController();
  running.add(ac);
  return ac;
}

/** Runs a watch in the background, keeping the events of one namespace. */
export function startWatch(cluster: ClusterPort, kind: SluiceKind, from: string, ns?: string): TestWatch {
  const events: WatchEvent[] = [];
  const ac = watchController();
  let failure: unknown;
  const done = cluster.watch(
    kind,
    from,
    (e) => {
      if (ns === undefined || e.object.metadata.namespace === ns) events.push(e);
    },
    ac.signal,
  );
  done.catch((error: unknown) => {
    failure = error ?? new Error('watch failed');
  });
  return {
    events,
    done,
    async until(condition, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!condition(events)) {
        if (failure) throw failure;
        if (Date.now() > deadline) {
          throw new Error(
            `watch timed out; got ${events.map((e) => `${e.type} ${e.object.metadata.name}`).join(', ')}`,
          );
        }
        await sleep(10);
      }
    },
    async stop() {
      ac.abort();
      running.delete(ac);
      await done;
    },
  };
}
