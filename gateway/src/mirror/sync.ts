import {
  ExpiredError,
  SLUICE_KINDS,
  type ClusterObject,
  type ClusterPort,
  type ListResult,
  type SluiceKind,
  type WatchEvent,
} from '@sluice/shared/ports';
import { abortableSleep } from '@sluice/shared/util';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import {
  ALL_NAMESPACES,
  dropTombstones,
  readCursor,
  rowNamespace,
  rowVersions,
  tombstone,
  tombstoneMissing,
  upsertObject,
  writeCursor,
} from './mirror.repository.js';
import { isMirrorable } from './projections.js';

export interface MirrorSyncOptions {
  /** Back-off after a failed watch, doubled up to `maxBackoffMs` (default 200 ms … 10 s). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /**
   * A bookmark (every event of a kind up to a version delivered) moves the
   * stored cursor at most this often (default 10 s): enough that a kind
   * without writes does not fall behind the retained history and relist at
   * the next start, without a write per bookmark.
   */
  cursorSaveMs?: number;
  /**
   * The adapter that lists and watches one namespace (undefined: all);
   * default the `cluster` given. A Kubernetes adapter scoped to each
   * namespace keeps a Role-scoped install within its Roles (as the operator's).
   */
  clusterFor?: (namespace: string | undefined) => ClusterPort;
  /**
   * Called (not awaited) with every mirrored object seen being deleted
   * (`deletionTimestamp` set, held by a finalizer), from events and relists:
   * the gateway's part of a deletion (a PostgreSQL source's slot).
   */
  onDeleting?: (object: ClusterObject) => void;
}

/** One list-and-watch: a kind in one namespace (undefined: in all of them, cluster scope). */
interface Loop {
  kind: SluiceKind;
  namespace: string | undefined;
  /** `Kind/namespace` (`*` for all): the key of its cursor and of its progress. */
  key: string;
  cluster: ClusterPort;
}

/**
 * Keeps the mirror equal to the cluster for writes that did not come through
 * this gateway (kubectl, Argo CD, the operator's status, another replica).
 * One loop per kind and watched namespace (SLUICE_WATCH_NAMESPACES: the
 * release namespace and the chart's extraNamespaces; one cluster-wide loop
 * per kind in cluster scope): resume the watch from the loop's stored cursor;
 * with no cursor, or when the cursor has expired (410), relist the namespace:
 * upsert every object, tombstone the namespace's rows the list no longer has,
 * and watch from the list's version. Each event is applied in one transaction
 * with the cursor it moves, and a relist in one transaction with its cursor,
 * so a restart resumes exactly where it stopped (and re-applying is harmless
 * anyway: writes are version-guarded).
 *
 * An id (the object's name, a UUID) is one row whatever the namespace: an
 * object whose id a live object of another namespace already holds is not
 * mirrored, and the clash is logged naming both (docs/architecture.md, "Ids
 * across namespaces"). When the holder goes, the one left out is mirrored.
 */
export class MirrorSync {
  private readonly abort = new AbortController();
  private readonly loops: Loop[];
  private readonly running: Promise<void>[] = [];
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;
  /** Per loop key, the version up to which every event has been applied; absent while (re)listing. */
  private readonly caughtUp = new Map<string, string>();
  private readonly waiters = new Set<() => void>();
  private readonly cursorSaveMs: number;
  /** Per loop key, when the stored cursor last moved (Date.now()). */
  private readonly savedAt = new Map<string, number>();
  /** `Kind/id` → the namespaces whose object of that id was left out (a clash), reported once each. */
  private readonly clashes = new Map<string, Set<string>>();

  /**
   * `namespaces`: those mirrored, the release namespace first (what
   * `watchNamespaces` gives); undefined: every namespace (cluster scope).
   */
  constructor(
    private readonly db: Db,
    private readonly cluster: ClusterPort,
    namespaces: readonly string[] | undefined,
    private readonly log: Logger,
    opts: MirrorSyncOptions = {},
  ) {
    this.minBackoffMs = opts.minBackoffMs ?? 200;
    this.maxBackoffMs = opts.maxBackoffMs ?? 10_000;
    this.cursorSaveMs = opts.cursorSaveMs ?? 10_000;
    this.onDeleting = opts.onDeleting;
    const clusterFor = opts.clusterFor ?? (() => cluster);
    const scopes = namespaces === undefined ? [undefined] : [...new Set(namespaces)];
    const adapters = new Map(scopes.map((ns) => [ns, clusterFor(ns)]));
    this.loops = SLUICE_KINDS.flatMap((kind) =>
      scopes.map((namespace) => ({
        kind,
        namespace,
        key: `${kind}/${namespace ?? ALL_NAMESPACES}`,
        cluster: adapters.get(namespace)!,
      })),
    );
  }

  private gc: NodeJS.Timeout | undefined;
  private readonly onDeleting: ((object: ClusterObject) => void) | undefined;

  private deleting(object: ClusterObject): void {
    if (object.metadata.deletionTimestamp) this.onDeleting?.(object);
  }

  start(): void {
    for (const loop of this.loops) this.running.push(this.run(loop));
    // Tombstones are only needed while older events may still arrive: drop
    // the old ones every hour, not only on a relist.
    this.gc = setInterval(() => {
      for (const kind of SLUICE_KINDS) {
        dropTombstones(this.db, kind).catch((err: unknown) =>
          this.log.warn({ err, kind }, 'Dropping mirror tombstones failed'),
        );
      }
    }, 3600_000);
    this.gc.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.gc);
    this.abort.abort();
    await Promise.allSettled(this.running);
  }

  /**
   * Resolves once the mirror shows, for every kind and namespace, the cluster
   * as it is when called (tests, probes). resourceVersion is one counter for
   * the whole cluster, so a loop's own events need not ever reach the current
   * version (the last write may have been of another kind or namespace); a
   * loop is therefore settled when it has passed that version (an event or a
   * bookmark), or when its rows match the list: every listed object at its
   * version or newer (or left out for a clash), no live row the list lacks
   * (bookmarks may be rare: Kubernetes sends one about a minute). Costs a
   * list per loop: not for hot paths.
   */
  async settled(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const targets = new Map(
      await Promise.all(
        this.loops.map(
          async (l) => [l.key, await l.cluster.list<ClusterObject>(l.kind, l.namespace)] as const,
        ),
      ),
    );
    const pending = new Set<Loop>(this.loops);
    let nextCompare = 0;
    for (;;) {
      for (const loop of pending) {
        const at = this.caughtUp.get(loop.key);
        if (at !== undefined && BigInt(at) >= BigInt(targets.get(loop.key)!.resourceVersion)) {
          pending.delete(loop);
        }
      }
      // Comparing rows reads the table: at most every 50 ms, however many events wake this.
      if (pending.size > 0 && Date.now() >= nextCompare) {
        for (const loop of pending) {
          if (this.caughtUp.has(loop.key) && (await this.mirrors(loop, targets.get(loop.key)!))) {
            pending.delete(loop);
          }
        }
        nextCompare = Date.now() + 50;
      }
      if (pending.size === 0) return;
      if (Date.now() > deadline) {
        const keys = [...pending].map((l) => l.key).join(', ');
        throw new Error(`The mirror sync did not catch up in time (${keys})`);
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(t);
          this.waiters.delete(wake);
          resolve();
        };
        const t = setTimeout(wake, 50);
        this.waiters.add(wake);
      });
    }
  }

  /** Whether the rows of a loop show the list (see `settled`). */
  private async mirrors(loop: Loop, list: ListResult<ClusterObject>): Promise<boolean> {
    const rows = new Map((await rowVersions(this.db, loop.kind, loop.namespace)).map((r) => [r.id, r]));
    const listed = new Set<string>();
    for (const object of list.items.filter(isMirrorable)) {
      const { name, namespace, resourceVersion } = object.metadata;
      if (this.clashes.get(`${loop.kind}/${name}`)?.has(namespace)) continue;
      listed.add(name);
      const row = rows.get(name);
      if (!row || row.resourceVersion < BigInt(resourceVersion ?? '0')) return false;
    }
    const listedAt = BigInt(list.resourceVersion);
    for (const row of rows.values()) {
      if (!row.deleted && !listed.has(row.id) && row.resourceVersion <= listedAt) return false;
    }
    return true;
  }

  private progressed(loop: Loop, rv: string): void {
    this.caughtUp.set(loop.key, rv);
    for (const wake of [...this.waiters]) wake();
  }

  private cursorOf(loop: Loop): string {
    return loop.namespace ?? ALL_NAMESPACES;
  }

  private async run(loop: Loop): Promise<void> {
    const { kind, namespace } = loop;
    const signal = this.abort.signal;
    let backoff = this.minBackoffMs;
    let mustRelist = false;
    while (!signal.aborted) {
      let relisted = false;
      try {
        let cursor = mustRelist ? undefined : await readCursor(this.db, kind, this.cursorOf(loop));
        if (cursor === undefined) {
          this.caughtUp.delete(loop.key);
          cursor = await this.relist(kind, namespace);
          relisted = true;
        }
        mustRelist = false;
        this.progressed(loop, cursor);
        await loop.cluster.watch(
          kind,
          cursor,
          (event) => this.apply(loop, event),
          signal,
          (rv) => this.bookmark(loop, rv),
        );
        backoff = this.minBackoffMs;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ExpiredError) {
          this.log.info({ kind, namespace }, 'Mirror cursor expired: relisting');
          mustRelist = true;
          // A history so short that even a fresh list expires: do not spin.
          if (!relisted) continue;
        } else {
          this.log.warn({ err, kind, namespace, backoffMs: backoff }, 'Mirror watch failed; retrying');
        }
        await abortableSleep(backoff, signal);
        backoff = Math.min(backoff * 2, this.maxBackoffMs);
      }
    }
  }

  /**
   * Mirrors `object` unless a live object of another namespace holds its id;
   * whether it wrote. The upsert itself refuses the clash (and an older
   * version): only then is the holder read, to log the clash once, naming both.
   */
  private async mirror(db: Db, object: ClusterObject): Promise<boolean> {
    const { kind } = object;
    const { name: id, namespace } = object.metadata;
    const key = `${kind}/${id}`;
    if (await upsertObject(db, object)) {
      this.clashes.get(key)?.delete(namespace);
      return true;
    }
    const held = await rowNamespace(db, kind, id);
    if (!held || held.deleted || held.namespace === namespace) return false; // an older version
    const left = this.clashes.get(key) ?? new Set<string>();
    if (!left.has(namespace)) {
      this.log.warn(
        { kind, id, namespace, mirroredNamespace: held.namespace },
        `${kind} ${namespace}/${id} is not shown by the API: its name (the REST id) is already ` +
          `that of ${kind} ${held.namespace}/${id}; rename one of them`,
      );
    }
    this.clashes.set(key, left.add(namespace));
    return false;
  }

  /** Whether the loop mirrors `object` (its namespace, named by a UUID). */
  private covers(loop: Loop, object: ClusterObject): boolean {
    return (
      (loop.namespace === undefined || object.metadata.namespace === loop.namespace) && isMirrorable(object)
    );
  }

  private async apply(loop: Loop, event: WatchEvent): Promise<void> {
    const object = event.object;
    const rv = object.metadata.resourceVersion;
    const mirrored = this.covers(loop, object);
    if (!mirrored && !rv) return;
    let freed = false;
    await this.db.transaction().execute(async (trx) => {
      if (mirrored) {
        if (event.type === 'DELETED') {
          // Guarded by namespace: the deletion of an object left out for a clash frees nothing.
          await tombstone(trx, object);
          const left = this.clashes.get(`${object.kind}/${object.metadata.name}`);
          freed = !left?.delete(object.metadata.namespace) && (left?.size ?? 0) > 0;
        } else {
          await this.mirror(trx, object);
        }
      }
      if (rv) await writeCursor(trx, loop.kind, this.cursorOf(loop), rv);
    });
    if (freed) await this.takeOver(object);
    if (mirrored && event.type !== 'DELETED') this.deleting(object);
    if (rv) {
      this.savedAt.set(loop.key, Date.now());
      this.progressed(loop, rv);
    }
  }

  /**
   * The object holding an id is gone: mirror one that was left out for the
   * clash, as it is now (its own later events are version-guarded against it).
   */
  private async takeOver(gone: ClusterObject): Promise<void> {
    const key = `${gone.kind}/${gone.metadata.name}`;
    for (const namespace of this.clashes.get(key) ?? []) {
      if (namespace === gone.metadata.namespace) continue;
      try {
        const loop = this.loops.find((l) => l.namespace === namespace || l.namespace === undefined);
        const next = await (loop?.cluster ?? this.cluster).get(gone.kind, namespace, gone.metadata.name);
        if (next && (await this.mirror(this.db, next))) return;
      } catch (err) {
        // Its next event, or the next relist, brings it.
        this.log.warn({ err, kind: gone.kind, namespace }, 'Mirroring a freed id failed');
      }
    }
  }

  private async bookmark(loop: Loop, rv: string): Promise<void> {
    if (Date.now() - (this.savedAt.get(loop.key) ?? 0) >= this.cursorSaveMs) {
      await writeCursor(this.db, loop.kind, this.cursorOf(loop), rv);
      this.savedAt.set(loop.key, Date.now());
    }
    this.progressed(loop, rv);
  }

  /**
   * Full resynchronisation of one kind in one namespace (undefined: all), in
   * one transaction; returns the version to watch from.
   */
  async relist(kind: SluiceKind, namespace: string | undefined): Promise<string> {
    const loop = this.loops.find((l) => l.kind === kind && l.namespace === namespace);
    if (!loop) throw new Error(`${kind} in ${namespace ?? 'every namespace'} is not mirrored`);
    const { items, resourceVersion } = await loop.cluster.list<ClusterObject>(kind, namespace);
    const mirrorable = items.filter((o) => this.covers(loop, o));
    const gone = await this.db.transaction().execute(async (trx) => {
      for (const object of mirrorable) {
        await this.mirror(trx, object);
      }
      const n = await tombstoneMissing(
        trx,
        kind,
        namespace,
        mirrorable.map((o) => o.metadata.name),
        resourceVersion,
      );
      await dropTombstones(trx, kind);
      await writeCursor(trx, kind, this.cursorOf(loop), resourceVersion);
      return n;
    });
    this.log.info({ kind, namespace, objects: mirrorable.length, removed: gone }, 'Mirror relisted');
    mirrorable.forEach((o) => this.deleting(o));
    return resourceVersion;
  }
}
