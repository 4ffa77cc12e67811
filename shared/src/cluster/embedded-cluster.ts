import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import {
  AlreadyExistsError,
  ConflictError,
  ExpiredError,
  NotFoundError,
  type ClusterObject,
  type ClusterPort,
  type ObjectMeta,
  type OwnerReference,
  type SluiceKind,
  type WatchEvent,
  type WatchEventType,
  type ListResult,
} from '../ports/cluster.js';
import { API_GROUP, API_VERSION } from '../util/version.js';
import { InvalidError } from './errors.js';
import { isJsonObject, jsonEqual, toJson, type Json } from './json.js';
import { parseLabelSelector, type LabelRequirement } from './label-selector.js';
import { mergePatch } from './merge-patch.js';
import {
  assertKind,
  assertName,
  assertNamespace,
  checkAnnotations,
  checkFinalizers,
  checkLabels,
  checkOwnerReferences,
  parseResourceVersion,
} from './validation.js';

export const CLUSTER_API_VERSION = `${API_GROUP}/${API_VERSION}`;

export interface EmbeddedClusterOptions {
  /** How often a watch looks for writes made through other connections or processes (ms; default 250). */
  pollIntervalMs?: number;
  /** The watch history keeps at most this many newest events (default 10,000). */
  retainEvents?: number;
  /** …and drops events older than this (ms; default 24 hours). */
  retainMs?: number;
  /** Compact inside every Nth write (default 100; 0 = only when `compact()` is called). */
  compactEvery?: number;
}

// The tables of its migration (migrations/ beside this file), as this adapter sees them.
interface ClusterTables {
  cluster_objects: {
    kind: string;
    namespace: string;
    name: string;
    uid: string;
    resource_version: string;
    generation: string;
    metadata: Json;
    spec: Json;
    status: Json | null;
  };
  cluster_events: {
    resource_version: string;
    kind: string;
    namespace: string;
    name: string;
    type: string;
    object: Json;
    created_at: Date;
  };
  cluster_meta: { key: string; value: string };
}
type Db = Kysely<ClusterTables> | Transaction<ClusterTables>;

/** What the metadata column holds; the rest of ObjectMeta has columns of its own. */
interface StoredMeta {
  creationTimestamp: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

/** An object as this adapter works on it, before it is rendered as a ClusterObject. */
interface State {
  kind: SluiceKind;
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: bigint;
  generation: number;
  meta: StoredMeta;
  spec: Json;
  status: Json | null;
}

/** What a write decided, given the current state. */
type Change =
  | { type: 'none'; state: State }
  | { type: Exclude<WatchEventType, 'DELETED'>; state: State }
  | { type: 'DELETED'; state: State };

const BATCH = 500;

// One emitter per database handle, so that every EmbeddedCluster on it (a
// gateway and an operator in one process) wakes the others' watches at once.
const emitters = new WeakMap<object, EventEmitter>();
function emitterFor(db: object): EventEmitter {
  let emitter = emitters.get(db);
  if (!emitter) {
    emitter = new EventEmitter();
    emitter.setMaxListeners(0);
    emitters.set(db, emitter);
  }
  return emitter;
}

/**
 * The cluster port on the service's own database (PostgreSQL or PGlite): the
 * embedded adapter of "Two runtimes, one code path", with the semantics of the
 * Kubernetes API server for custom resources with a status subresource.
 *
 * Ordering: every write runs in one transaction that first locks the
 * `revision` row of `cluster_meta`, takes the next value, writes the object and
 * its event, and commits before the lock is released. Writers are therefore
 * serialized, and revision N is committed (visible) before N+1 is even
 * allocated, so a watch reading "events above my cursor" can never see a later
 * revision while an earlier one is still in flight.
 */
export class EmbeddedCluster implements ClusterPort {
  readonly adapter = 'embedded';
  private readonly db: Kysely<ClusterTables>;
  private readonly emitter: EventEmitter;
  private readonly pollIntervalMs: number;
  private readonly retainEvents: number;
  private readonly retainMs: number;
  private readonly compactEvery: bigint;

  // Kysely<any>: the gateway's typed database (or any other) is accepted as is.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  constructor(db: Kysely<any>, options: EmbeddedClusterOptions = {}) {
    this.db = db as Kysely<ClusterTables>;
    this.emitter = emitterFor(db);
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    this.retainEvents = options.retainEvents ?? 10_000;
    this.retainMs = options.retainMs ?? 24 * 3600_000;
    this.compactEvery = BigInt(options.compactEvery ?? 100);
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async get<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
  ): Promise<T | undefined> {
    assertKind(kind);
    const state = await load(this.db, kind, namespace, name);
    return state && (render(state) as T);
  }

  async list<T extends ClusterObject>(
    kind: SluiceKind,
    namespace?: string,
    labelSelector?: string,
  ): Promise<ListResult<T>> {
    assertKind(kind);
    const filters = [sql`kind = ${kind}`];
    if (namespace !== undefined) filters.push(sql`namespace = ${namespace}`);
    for (const r of parseLabelSelector(labelSelector)) filters.push(labelFilter(r));
    // One statement, hence one snapshot: the revision returned is exactly the
    // state the items show, so a watch from it misses nothing and repeats nothing.
    const { rows } = await sql<ObjectRow & { revision: string }>`
      select m.value::text as revision, o.*
      from cluster_meta m
      left join lateral (
        select ${objectColumns} from cluster_objects where ${sql.join(filters, sql` and `)}
      ) o on true
      where m.key = 'revision'
      order by o.namespace, o.name`.execute(this.db);
    const revision = rows[0]?.revision ?? '0';
    // In etcd's key order, as the API server lists: by namespace, then name
    // (the columns collate in byte order).
    const items = rows.filter((r) => r.kind !== null).map((r) => render(fromRow(r)) as T);
    return { items, resourceVersion: revision };
  }

  async create<T extends ClusterObject>(object: T): Promise<T> {
    const { kind, namespace, name } = identify(object);
    const input = object.metadata;
    const labels = checkLabels(input.labels);
    const annotations = checkAnnotations(input.annotations);
    const finalizers = checkFinalizers(input.finalizers);
    const ownerReferences = checkOwnerReferences(input.ownerReferences);
    const spec = toJson(object.spec ?? {});
    return (await this.write(kind, namespace, name, (current, now) => {
      if (current) throw new AlreadyExistsError(`${kind} ${namespace}/${name} already exists`);
      // Status is the status subresource's: what a create carries is dropped,
      // as the API server does for kinds with `subresources.status`.
      return {
        type: 'ADDED',
        state: {
          kind,
          namespace,
          name,
          uid: randomUUID(),
          resourceVersion: 0n,
          generation: 1,
          meta: compactMeta({ creationTimestamp: now, labels, annotations, finalizers, ownerReferences }),
          spec,
          status: null,
        },
      };
    })) as T;
  }

  async update<T extends ClusterObject>(object: T): Promise<T> {
    const { kind, namespace, name } = identify(object);
    const input = object.metadata;
    // Custom resources refuse unconditional updates: the caller must say which
    // version it read.
    const expected = parseResourceVersion(input.resourceVersion, 'metadata.resourceVersion');
    const next = {
      labels: checkLabels(input.labels),
      annotations: checkAnnotations(input.annotations),
      finalizers: checkFinalizers(input.finalizers),
      ownerReferences: checkOwnerReferences(input.ownerReferences),
      spec: toJson(object.spec ?? {}),
    };
    return (await this.write(kind, namespace, name, (current) => {
      if (!current) throw new NotFoundError(`${kind} ${namespace}/${name} not found`);
      if (current.resourceVersion !== expected) {
        throw new ConflictError(
          `${kind} ${namespace}/${name}: the object has been modified (resourceVersion ${current.resourceVersion}, not ${expected})`,
        );
      }
      return change(current, next);
    })) as T;
  }

  async patch<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
    patch: unknown,
  ): Promise<T> {
    assertKind(kind);
    if (!isJsonObject(patch)) throw new InvalidError('a merge patch of an object must be a JSON object');
    const patchMeta = patch.metadata;
    if (patchMeta !== undefined && patchMeta !== null && !isJsonObject(patchMeta)) {
      throw new InvalidError('metadata in a patch must be an object');
    }
    // A resourceVersion in the patch is a precondition, as in Kubernetes.
    const expected =
      patchMeta?.resourceVersion === undefined || patchMeta.resourceVersion === null
        ? undefined
        : parseResourceVersion(patchMeta.resourceVersion, 'metadata.resourceVersion');
    return (await this.write(kind, namespace, name, (current) => {
      if (!current) throw new NotFoundError(`${kind} ${namespace}/${name} not found`);
      if (expected !== undefined && current.resourceVersion !== expected) {
        throw new ConflictError(`${kind} ${namespace}/${name}: the object has been modified`);
      }
      // Only the writable parts take part: status belongs to patchStatus, and
      // name, uid, timestamps and counters are the server's.
      const meta = {
        labels: current.meta.labels,
        annotations: current.meta.annotations,
        finalizers: current.meta.finalizers,
        ownerReferences: current.meta.ownerReferences,
      };
      const patched = mergePatch(meta as unknown as Json, patchMeta ?? {}) as Record<string, unknown>;
      return change(current, {
        labels: checkLabels(patched.labels),
        annotations: checkAnnotations(patched.annotations),
        finalizers: checkFinalizers(patched.finalizers),
        ownerReferences: checkOwnerReferences(patched.ownerReferences),
        spec: 'spec' in patch ? (mergePatch(current.spec, patch.spec) ?? {}) : current.spec,
      });
    })) as T;
  }

  async patchStatus<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
    status: unknown,
  ): Promise<T> {
    assertKind(kind);
    return (await this.write(kind, namespace, name, (current) => {
      if (!current) throw new NotFoundError(`${kind} ${namespace}/${name} not found`);
      const next = mergePatch(current.status, status);
      if (jsonEqual(next, current.status)) return { type: 'none', state: current };
      return { type: 'MODIFIED', state: { ...current, status: next } };
    })) as T;
  }

  async delete(kind: SluiceKind, namespace: string, name: string): Promise<void> {
    assertKind(kind);
    await this.write(kind, namespace, name, (current, now) => {
      if (!current) throw new NotFoundError(`${kind} ${namespace}/${name} not found`);
      if (!current.meta.finalizers?.length) return { type: 'DELETED', state: current };
      // Already terminating: a second delete changes nothing.
      if (current.meta.deletionTimestamp) return { type: 'none', state: current };
      // As the API server's markAsDeleting: the generation moves too, because
      // the object's desired state ("gone") changed.
      return {
        type: 'MODIFIED',
        state: {
          ...current,
          generation: current.generation + 1,
          meta: { ...current.meta, deletionTimestamp: now },
        },
      };
    });
  }

  async watch<T extends ClusterObject>(
    kind: SluiceKind,
    resourceVersion: string,
    onEvent: (event: WatchEvent<T>) => void | Promise<void>,
    signal: AbortSignal,
    onBookmark?: (resourceVersion: string) => void | Promise<void>,
  ): Promise<void> {
    assertKind(kind);
    let cursor = parseResourceVersion(resourceVersion);
    // Subscribed before the first read, so a write committed between a read
    // and the wait that follows still wakes this watch.
    let woken = false;
    let wake: (() => void) | undefined;
    const onWrite = () => {
      woken = true;
      wake?.();
    };
    const onAbort = () => wake?.();
    this.emitter.on(kind, onWrite);
    signal.addEventListener('abort', onAbort);
    try {
      while (!signal.aborted) {
        woken = false;
        const { horizon, revision, events } = await readEvents(this.db, kind, cursor);
        // Events between the cursor and the horizon are gone: the caller must
        // relist. Read in the same statement as the events, so never a false
        // "complete" batch.
        if (cursor < horizon) {
          throw new ExpiredError(
            `resourceVersion ${cursor} of ${kind} is too old (history starts after ${horizon})`,
          );
        }
        for (const event of events) {
          if (signal.aborted) return;
          await onEvent({ type: event.type, object: event.object as unknown as T });
          cursor = event.resourceVersion;
        }
        if (events.length === BATCH) continue;
        // Every event of this kind up to `revision` was in this batch (the
        // revision was read in the same snapshot): a bookmark.
        if (revision > cursor) {
          cursor = revision;
          await onBookmark?.(String(revision));
        }
        if (woken) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.pollIntervalMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
          if (woken || signal.aborted) wake();
        });
        wake = undefined;
      }
    } finally {
      this.emitter.off(kind, onWrite);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Drops the history beyond `retainEvents` and `retainMs` and moves the
   * horizon up to it; a watch from an older version then fails with
   * ExpiredError. Returns the new horizon.
   */
  async compact(): Promise<string> {
    return String(await this.db.transaction().execute((trx) => this.compactIn(trx)));
  }

  private async compactIn(trx: Db): Promise<bigint> {
    const { rows } = await sql<{ horizon: string }>`
      with cutoff as (
        select greatest(
          (select value from cluster_meta where key = 'revision') - ${this.retainEvents}::bigint,
          coalesce((select max(resource_version) from cluster_events
                    where created_at < now() - make_interval(secs => ${this.retainMs / 1000})), 0)
        ) as rv
      ), gone as (
        delete from cluster_events where resource_version <= (select rv from cutoff)
      )
      update cluster_meta set value = greatest(value, (select rv from cutoff))
      where key = 'horizon'
      returning value::text as horizon`.execute(trx);
    return BigInt(rows[0]?.horizon ?? '0');
  }

  /**
   * The one write path: lock the revision counter, read the object, let
   * `decide` compute the change (or throw), then store the object and its
   * event under the next revision, all in one transaction.
   */
  private async write(
    kind: SluiceKind,
    namespace: string,
    name: string,
    decide: (current: State | undefined, now: string) => Change,
  ): Promise<ClusterObject> {
    const { object, written } = await this.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ value: string }>`
        select value::text as value from cluster_meta where key = 'revision' for update`.execute(trx);
      const current = await load(trx, kind, namespace, name);
      const decided = decide(current, timestamp());
      if (decided.type === 'none') return { object: render(decided.state), written: false };
      const revision = BigInt(rows[0]?.value ?? '0') + 1n;
      const state = { ...decided.state, resourceVersion: revision };
      const object = render(state);
      await sql`update cluster_meta set value = ${String(revision)}::bigint where key = 'revision'`.execute(
        trx,
      );
      if (decided.type === 'DELETED') {
        await trx
          .deleteFrom('cluster_objects')
          .where('kind', '=', kind)
          .where('namespace', '=', namespace)
          .where('name', '=', name)
          .execute();
      } else {
        await sql`
          insert into cluster_objects (kind, namespace, name, uid, resource_version, generation, metadata, spec, status)
          values (${kind}, ${namespace}, ${name}, ${state.uid}, ${String(revision)}::bigint,
                  ${String(state.generation)}::bigint, ${jsonb(state.meta)}, ${jsonb(state.spec)},
                  ${state.status === null ? null : jsonb(state.status)})
          on conflict (kind, namespace, name) do update set
            resource_version = excluded.resource_version, generation = excluded.generation,
            metadata = excluded.metadata, spec = excluded.spec, status = excluded.status`.execute(trx);
      }
      await sql`
        insert into cluster_events (resource_version, kind, namespace, name, type, object)
        values (${String(revision)}::bigint, ${kind}, ${namespace}, ${name}, ${decided.type}, ${jsonb(object)})`.execute(
        trx,
      );
      // Under the revision lock, so compaction never races a writer; cheap
      // because it runs once per `compactEvery` revisions.
      if (this.compactEvery > 0n && revision % this.compactEvery === 0n) await this.compactIn(trx);
      return { object, written: true };
    });
    // After the commit: a woken watch must find the event.
    if (written) this.emitter.emit(kind);
    return object;
  }
}

interface ObjectRow {
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  resource_version: string;
  generation: string;
  metadata: Json;
  spec: Json;
  status: Json | null;
}

const objectColumns = sql`kind, namespace, name, uid::text as uid, resource_version::text as resource_version,
  generation::text as generation, metadata, spec, status`;

async function load(db: Db, kind: SluiceKind, namespace: string, name: string): Promise<State | undefined> {
  const { rows } = await sql<ObjectRow>`
    select ${objectColumns} from cluster_objects
    where kind = ${kind} and namespace = ${namespace} and name = ${name}`.execute(db);
  return rows[0] && fromRow(rows[0]);
}

async function readEvents(
  db: Db,
  kind: SluiceKind,
  after: bigint,
): Promise<{
  horizon: bigint;
  revision: bigint;
  events: { resourceVersion: bigint; type: WatchEventType; object: Json }[];
}> {
  const { rows } = await sql<{
    horizon: string;
    revision: string;
    resource_version: string | null;
    type: WatchEventType;
    object: Json;
  }>`
    select h.value::text as horizon,
      (select value::text from cluster_meta where key = 'revision') as revision,
      e.resource_version::text as resource_version, e.type, e.object
    from cluster_meta h
    left join lateral (
      select resource_version, type, object from cluster_events
      where kind = ${kind} and resource_version > ${String(after)}::bigint
      order by resource_version
      limit ${BATCH}
    ) e on true
    where h.key = 'horizon'
    order by e.resource_version`.execute(db);
  return {
    horizon: BigInt(rows[0]?.horizon ?? '0'),
    revision: BigInt(rows[0]?.revision ?? '0'),
    events: rows
      .filter((r) => r.resource_version !== null)
      .map((r) => ({
        resourceVersion: BigInt(r.resource_version as string),
        type: r.type,
        object: r.object,
      })),
  };
}

function labelFilter(r: LabelRequirement): RawBuilder<unknown> {
  const labels = sql`coalesce(metadata -> 'labels', '{}'::jsonb)`;
  switch (r.op) {
    case 'exists':
      return sql`jsonb_exists(${labels}, ${r.key})`;
    case 'notExists':
      return sql`not jsonb_exists(${labels}, ${r.key})`;
    case 'equals':
      return sql`${labels} @> ${jsonb({ [r.key]: r.value })}`;
    case 'notEquals':
      return sql`not (${labels} @> ${jsonb({ [r.key]: r.value })})`;
  }
}

// Always sent as text and cast: node-postgres would turn a JS array into a
// PostgreSQL array, not a JSON one.
function jsonb(value: unknown): RawBuilder<unknown> {
  return sql`${JSON.stringify(value)}::jsonb`;
}

function fromRow(row: ObjectRow): State {
  return {
    kind: row.kind as SluiceKind,
    namespace: row.namespace,
    name: row.name,
    uid: row.uid,
    resourceVersion: BigInt(row.resource_version),
    generation: Number(row.generation),
    meta: row.metadata as unknown as StoredMeta,
    spec: row.spec,
    status: row.status,
  };
}

/** A fresh ClusterObject: nothing in it is shared with stored or cached state. */
function render(state: State): ClusterObject {
  const meta = toJson(state.meta) as unknown as StoredMeta;
  const metadata: ObjectMeta = {
    name: state.name,
    namespace: state.namespace,
    uid: state.uid,
    resourceVersion: String(state.resourceVersion),
    generation: state.generation,
    ...meta,
  };
  const object: ClusterObject = {
    apiVersion: CLUSTER_API_VERSION,
    kind: state.kind,
    metadata,
    spec: toJson(state.spec),
  };
  if (state.status !== null) object.status = toJson(state.status);
  return object;
}

function identify(object: ClusterObject): { kind: SluiceKind; namespace: string; name: string } {
  const untrusted: unknown = object;
  if (!isJsonObject(untrusted) || !isJsonObject(untrusted.metadata)) {
    throw new InvalidError('an object needs kind and metadata');
  }
  if (object.apiVersion !== CLUSTER_API_VERSION) {
    throw new InvalidError(`apiVersion ${JSON.stringify(object.apiVersion)} is not ${CLUSTER_API_VERSION}`);
  }
  assertKind(object.kind);
  assertNamespace(object.metadata.namespace);
  assertName(object.metadata.name);
  return { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
}

/**
 * The outcome of replacing the writable parts of `current` (update, patch):
 * generation moves with the spec only; removing the last finalizer of an
 * object being deleted deletes it; nothing changed means no write at all, as
 * the API server skips identical writes.
 */
function change(
  current: State,
  next: {
    labels: Record<string, string>;
    annotations: Record<string, string>;
    finalizers: string[];
    ownerReferences: OwnerReference[];
    spec: Json;
  },
): Change {
  const terminating = current.meta.deletionTimestamp !== undefined;
  const before = current.meta.finalizers ?? [];
  if (terminating && next.finalizers.some((f) => !before.includes(f))) {
    throw new InvalidError(
      `${current.kind} ${current.namespace}/${current.name}: no new finalizers can be added while it is being deleted`,
    );
  }
  const meta = compactMeta({ ...current.meta, ...next });
  const specChanged = !jsonEqual(current.spec, next.spec);
  if (!specChanged && jsonEqual(meta, current.meta)) return { type: 'none', state: current };
  const state: State = {
    ...current,
    meta,
    spec: next.spec,
    generation: specChanged ? current.generation + 1 : current.generation,
  };
  if (terminating && next.finalizers.length === 0) return { type: 'DELETED', state };
  return { type: 'MODIFIED', state };
}

/** Empty labels, annotations and finalizers are left out, as the API server serializes them. */
function compactMeta(meta: StoredMeta): StoredMeta {
  const out: StoredMeta = { creationTimestamp: meta.creationTimestamp };
  if (meta.deletionTimestamp) out.deletionTimestamp = meta.deletionTimestamp;
  if (meta.labels && Object.keys(meta.labels).length) out.labels = meta.labels;
  if (meta.annotations && Object.keys(meta.annotations).length) out.annotations = meta.annotations;
  if (meta.finalizers?.length) out.finalizers = meta.finalizers;
  if (meta.ownerReferences?.length) out.ownerReferences = meta.ownerReferences;
  return out;
}

/** RFC 3339 in whole seconds, the form of Kubernetes' metav1.Time. */
function timestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}
