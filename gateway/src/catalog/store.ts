import { randomUUID } from 'node:crypto';
import { CLUSTER_API_VERSION } from '@sluice/shared/cluster';
import { NotFoundError, type ClusterObject, type ClusterPort, type SluiceKind } from '@sluice/shared/ports';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import type { ValidationIssue } from '../http/errors.js';
import {
  markDeleted,
  markDeleting,
  rowNamespace,
  tombstone,
  upsertObject,
} from '../mirror/mirror.repository.js';

/** One step of a multi-object write, with the step that takes it back. */
export interface Step {
  run(): Promise<void>;
  undo(): Promise<void>;
}

/**
 * The gateway's writes of custom resources: through the cluster port (the
 * source of truth), then through to the mirror at once, so that the caller
 * reads its own write. The watch-driven sync (mirror/sync.ts) would get there
 * too, a moment later; both writes are version-guarded, so their order does
 * not matter.
 *
 * Objects are addressed by id (their name, unique across the mirrored
 * namespaces): reads and writes by id go to the namespace the mirror holds
 * the object in (an extra watched namespace for objects applied there with
 * kubectl), new objects to `namespace`, the release namespace, unless they
 * belong to an existing object (docs/architecture.md, "Ids across namespaces").
 */
export class CatalogStore {
  constructor(
    readonly cluster: ClusterPort,
    private readonly db: Db,
    readonly namespace: string,
    private readonly log: Logger,
  ) {}

  /** A new object of `kind`, named by a fresh UUID (its REST identifier), in the release namespace by default. */
  object<Spec>(
    kind: SluiceKind,
    spec: Spec,
    labels: Record<string, string>,
    id = randomUUID(),
    namespace = this.namespace,
  ) {
    return {
      apiVersion: CLUSTER_API_VERSION,
      kind,
      metadata: { name: id, namespace, labels },
      spec,
    } satisfies ClusterObject<Spec>;
  }

  /** Where the object `id` lives: its mirror row's namespace, else the release namespace. */
  async namespaceOf(kind: SluiceKind, id: string): Promise<string> {
    return (await rowNamespace(this.db, kind, id))?.namespace ?? this.namespace;
  }

  /**
   * References stay within one namespace: the operator resolves an object's
   * references in its own namespace. The issue to report at `loc` when the
   * referenced `kind`, which lives in `at` (its mirror row's namespace), is
   * elsewhere than `namespace`.
   */
  referenceIssue(
    kind: SluiceKind,
    at: string,
    namespace: string,
    loc: (string | number)[],
  ): ValidationIssue | undefined {
    if (at === namespace) return undefined;
    return {
      loc,
      msg: `The ${kind} lives in namespace "${at}", not "${namespace}": references stay within one namespace`,
      type: 'value_error',
    };
  }

  /** The object from the cluster; `namespace` when the caller already read it from the mirror. */
  async get<T extends ClusterObject>(
    kind: SluiceKind,
    id: string,
    namespace?: string,
  ): Promise<T | undefined> {
    return this.cluster.get<T>(kind, namespace ?? (await this.namespaceOf(kind, id)), id);
  }

  async create<T extends ClusterObject>(object: T): Promise<T> {
    const out = await this.cluster.create(object);
    await this.mirror(out);
    return out;
  }

  /**
   * Writes an object the cluster accepted through to the mirror. The cluster
   * write stands either way: should the mirror write fail, the watch-driven
   * sync brings the row a moment later, so the failure is logged and the
   * request goes on (failing it would leave an object the client was told
   * does not exist).
   */
  private async mirror(object: ClusterObject): Promise<void> {
    try {
      await upsertObject(this.db, object);
    } catch (err) {
      this.log.warn({ err, kind: object.kind, name: object.metadata.name }, 'Mirror write-through failed');
    }
  }

  /** Replaces spec and metadata; a stale resourceVersion is a ConflictError. */
  async update<T extends ClusterObject>(object: T): Promise<T> {
    const out = await this.cluster.update(object);
    await this.mirror(out);
    return out;
  }

  /** JSON merge patch of metadata and spec. */
  async patch<T extends ClusterObject>(kind: SluiceKind, id: string, patch: unknown): Promise<T> {
    const out = await this.cluster.patch<T>(kind, await this.namespaceOf(kind, id), id, patch);
    await this.mirror(out);
    return out;
  }

  async patchStatus<T extends ClusterObject>(kind: SluiceKind, id: string, status: unknown): Promise<T> {
    const out = await this.cluster.patchStatus<T>(kind, await this.namespaceOf(kind, id), id, status);
    await this.mirror(out);
    return out;
  }

  /** Deletes; an object already gone is fine (a retried or compensating delete). */
  async delete(kind: SluiceKind, id: string): Promise<void> {
    // The last version before the delete: its tombstone must outrank it.
    const namespace = await this.namespaceOf(kind, id);
    const before = await this.cluster.get(kind, namespace, id);
    try {
      await this.cluster.delete(kind, namespace, id);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    const still = await this.cluster.get(kind, namespace, id);
    if (still) {
      await upsertObject(this.db, still);
      await markDeleting(this.db, kind, id);
    } else if (before) {
      // The deletion took a version after `before`'s; the sync's DELETED event
      // moves the tombstone up to it.
      await tombstone(this.db, before, String(BigInt(before.metadata.resourceVersion ?? '0') + 1n));
    } else {
      await markDeleted(this.db, kind, id);
    }
  }

  /**
   * Runs the steps in order; when one fails, takes back the ones that ran, in
   * reverse, and rethrows. The cluster API has no transactions across
   * objects, so this is how a multi-object write is all or nothing: the
   * services validate everything before the first step, and a failure here is
   * an infrastructure failure.
   */
  async runSteps(steps: Step[]): Promise<void> {
    const done: Step[] = [];
    try {
      for (const step of steps) {
        await step.run();
        done.push(step);
      }
    } catch (err) {
      for (const step of done.reverse()) {
        await step
          .undo()
          .catch((undoErr: unknown) =>
            this.log.error({ err: undoErr }, 'Could not take back a step of a failed catalog write'),
          );
      }
      throw err;
    }
  }

  /** A step that creates `object` (and deletes it when taken back). */
  createStep<T extends ClusterObject>(object: T, onCreated?: (created: T) => void): Step {
    return {
      run: async () => {
        const created = await this.create(object);
        onCreated?.(created);
      },
      undo: () => this.delete(object.kind, object.metadata.name),
    };
  }
}
