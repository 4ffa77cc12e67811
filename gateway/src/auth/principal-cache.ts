import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import type { Principal } from './principal.js';

/**
 * Principals resolved from tokens, kept for a moment so that a burst of
 * requests with one token costs one database query instead of one each.
 *
 * Correctness rests on `principalCacheInvalidation`: every insert, update or
 * delete this process sends clears the cache, whatever table and code path, so
 * a logout, a deactivation or a new active environment is seen at once by
 * this gateway. Other gateway replicas see it within `ttlMs` (docs/api.md).
 */
export class PrincipalCache {
  readonly #entries = new Map<string, { principal: Principal; until: number }>();
  #generation = 0;

  constructor(
    readonly ttlMs = 2000,
    readonly maxEntries = 10_000,
  ) {}

  get(tokenId: string): Principal | undefined {
    const hit = this.#entries.get(tokenId);
    if (!hit) return undefined;
    if (hit.until < Date.now()) {
      this.#entries.delete(tokenId);
      return undefined;
    }
    return hit.principal;
  }

  /**
   * Counts the clears. A lookup reads it before its query and hands it to
   * `set`: if a write cleared the cache meanwhile, the row read may predate
   * that write (a password change, a logout), so it is not kept.
   */
  get generation(): number {
    return this.#generation;
  }

  set(tokenId: string, principal: Principal, generation = this.#generation): void {
    if (this.ttlMs <= 0 || generation !== this.#generation) return;
    // Bounded: when full, the oldest entry goes (Map keeps insertion order).
    if (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(tokenId, { principal, until: Date.now() + this.ttlMs });
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
  }
}

const WRITES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode', 'MergeQueryNode']);

/** A Kysely plugin that clears the cache on every write, before and after it runs. */
export function principalCacheInvalidation(cache: PrincipalCache): KyselyPlugin {
  const writes = new WeakSet<object>();
  return {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      if (WRITES.has(args.node.kind)) {
        cache.clear();
        writes.add(args.queryId);
      }
      return args.node;
    },
    // Cleared again once the statement ran: a read that raced the write
    // must not keep the old row.
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      if (writes.has(args.queryId)) cache.clear();
      return args.result;
    },
  };
}
