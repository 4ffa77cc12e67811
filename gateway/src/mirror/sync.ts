import {
  abortableSleep,
  ExpiredError,
  SLUICE_KINDS,
  type ClusterObject,
  type ClusterPort,
  type ListResult,
  type SluiceKind,
  type WatchEvent,
} from '@sluice/shared';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import {
  dropTombstones,
  readCursor,
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
}

/**
 * Keeps the mirror equal to the cluster for writes that did not come through
 * this gateway (kubectl, Argo CD, the operator's status, another replica).
 * One loop per kind: resume the watch from the stored cursor; with no cursor,
 * or when the cursor has expired (410), relist: upsert every object, tombstone
 * the rows the list no longer has, and watch from the list's version. Each
 * event is applied in one transaction with the cursor it moves, and a relist
 * in one transaction with its cursor, so a restart resumes exactly where it
 * stopped (and re-applying is harmless anyway: writes are version-guarded).
 */
export class MirrorSync {
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;
  /** Per kind, the version up to which every event has been applied; absent while (re)listing. */
  private readonly caughtUp = new Map<SluiceKind, string>();
  private readonly waiters = new Set<() => void>();
  private readonly cursorSaveMs: number;
  /** Per kind, when the stored cursor last moved (Date.now()). */
  private readonly savedAt = new Map<SluiceKind, number>();

  constructor(
    private readonly db: Db,
    private readonly cluster: ClusterPort,
    private readonly namespace: string,
    private readonly log: Logger,
    opts: MirrorSyncOptions = {},
  ) {
    this.minBackoffMs = opts.minBackoffMs ?? 200;
    this.maxBackoffMs = opts.maxBackoffMs ?? 10_000;
    this.cursorSaveMs = opts.cursorSaveMs ?? 10_000;
  }

  private gc: NodeJS.Timeout | undefined;

  start(): void {
    for (const kind of SLUICE_KINDS) this.loops.push(this.run(kind));
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
    await Promise.allSettled(this.loops);
  }

  /**
   * Resolves once the mirror shows, for every kind, the cluster as it is when
   * called (tests, probes). resourceVersion is one counter for the whole
   * cluster, so a kind's own events need not ever reach the current version
   * (the last write may have been of another kind); a kind is therefore
   * settled when its loop has passed that version (an event or a bookmark),
   * or when its rows match the list: every listed object at its version or
   * newer, no live row the list lacks (bookmarks may be rare: Kubernetes
   * sends one about a minute). Costs a list per kind: not for hot paths.
   */
  async settled(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const targets = new Map(
      await Promise.all(
        SLUICE_KINDS.map(
          async (k) => [k, await this.cluster.list<ClusterObject>(k, this.namespace)] as const,
        ),
      ),
    );
    const pending = new Set<SluiceKind>(SLUICE_KINDS);
    let nextCompare = 0;
    for (;;) {
      for (const kind of pending) {
        const at = this.caughtUp.get(kind);
        if (at !== undefined && BigInt(at) >= BigInt(targets.get(kind)!.resourceVersion)) {
          pending.delete(kind);
        }
      }
      // Comparing rows reads the table: at most every 50 ms, however many events wake this.
      if (pending.size > 0 && Date.now() >= nextCompare) {
        for (const kind of pending) {
          if (this.caughtUp.has(kind) && (await this.mirrors(kind, targets.get(kind)!))) pending.delete(kind);
        }
        nextCompare = Date.now() + 50;
      }
      if (pending.size === 0) return;
      if (Date.now() > deadline) {
        throw new Error(`The mirror sync did not catch up in time (${[...pending].join(', ')})`);
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

  /** Whether the rows of `kind` show the list (see `settled`). */
  private async mirrors(kind: SluiceKind, list: ListResult<ClusterObject>): Promise<boolean> {
    const rows = new Map((await rowVersions(this.db, kind, this.namespace)).map((r) => [r.id, r]));
    const listed = new Set<string>();
    for (const object of list.items.filter(isMirrorable)) {
      listed.add(object.metadata.name);
      const row = rows.get(object.metadata.name);
      if (!row || row.resourceVersion < BigInt(object.metadata.resourceVersion ?? '0')) return false;
    }
    const listedAt = BigInt(list.resourceVersion);
    for (const row of rows.values()) {
      if (!row.deleted && !listed.has(row.id) && row.resourceVersion <= listedAt) return false;
    }
    return true;
  }

  private progressed(kind: SluiceKind, rv: string): void {
    this.caughtUp.set(kind, rv);
    for (const wake of [...this.waiters]) wake();
  }

  private async run(kind: SluiceKind): Promise<void> {
    const signal = this.abort.signal;
    let backoff = this.minBackoffMs;
    let mustRelist = false;
    while (!signal.aborted) {
      let relisted = false;
      try {
        let cursor = mustRelist ? undefined : await readCursor(this.db, kind);
        if (cursor === undefined) {
          this.caughtUp.delete(kind);
          cursor = await this.relist(kind);
          relisted = true;
        }
        mustRelist = false;
        this.progressed(kind, cursor);
        await this.cluster.watch(
          kind,
          cursor,
          (event) => this.apply(kind, event),
          signal,
          (rv) => this.bookmark(kind, rv),
        );
        backoff = this.minBackoffMs;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ExpiredError) {
          this.log.info({ kind }, 'Mirror cursor expired: relisting');
          mustRelist = true;
          // A history so short that even a fresh list expires: do not spin.
          if (!relisted) continue;
        } else {
          this.log.warn({ err, kind, backoffMs: backoff }, 'Mirror watch failed; retrying');
        }
        await abortableSleep(backoff, signal);
        backoff = Math.min(backoff * 2, this.maxBackoffMs);
      }
    }
  }

  private async apply(kind: SluiceKind, event: WatchEvent): Promise<void> {
    const object = event.object;
    const rv = object.metadata.resourceVersion;
    const mirrored = object.metadata.namespace === this.namespace && isMirrorable(object);
    if (!mirrored && !rv) return;
    await this.db.transaction().execute(async (trx) => {
      if (mirrored) {
        if (event.type === 'DELETED') await tombstone(trx, object);
        else await upsertObject(trx, object);
      }
      if (rv) await writeCursor(trx, kind, rv);
    });
    if (rv) {
      this.savedAt.set(kind, Date.now());
      this.progressed(kind, rv);
    }
  }

  private async bookmark(kind: SluiceKind, rv: string): Promise<void> {
    if (Date.now() - (this.savedAt.get(kind) ?? 0) >= this.cursorSaveMs) {
      await writeCursor(this.db, kind, rv);
      this.savedAt.set(kind, Date.now());
    }
    this.progressed(kind, rv);
  }

  /** Full resynchronisation of one kind, in one transaction; returns the version to watch from. */
  async relist(kind: SluiceKind): Promise<string> {
    const { items, resourceVersion } = await this.cluster.list<ClusterObject>(kind, this.namespace);
    const mirrorable = items.filter(isMirrorable);
    const gone = await this.db.transaction().execute(async (trx) => {
      for (const object of mirrorable) await upsertObject(trx, object);
      const n = await tombstoneMissing(
        trx,
        kind,
        this.namespace,
        mirrorable.map((o) => o.metadata.name),
        resourceVersion,
      );
      await dropTombstones(trx, kind);
      await writeCursor(trx, kind, resourceVersion);
      return n;
    });
    this.log.info({ kind, objects: mirrorable.length, removed: gone }, 'Mirror relisted');
    return resourceVersion;
  }
}
