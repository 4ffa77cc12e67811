import { ExpiredError, type ClusterObject, type ClusterPort, type SluiceKind } from '@sluice/shared/ports';
import { abortableSleep } from '@sluice/shared/util';
import type { Logger } from './logger.js';

/**
 * A cache of one kind, kept by list + watch (client-go's reflector). Every
 * (re)list hands every object to `onChange` again and reports objects that
 * vanished meanwhile: client-node's informer does not re-fire for objects it
 * already knew, which loses updates made while a watch was down. A watch
 * that fails is restarted with back-off, from a fresh list.
 */
export class Informer<T extends ClusterObject = ClusterObject> {
  readonly cache = new Map<string, T>();
  private syncedOnce!: () => void;
  private syncedRun = this.nextSync();

  /**
   * Resolves once the current run has listed: a run after an earlier one (a
   * replica that leads again) waits for its own list, not the stale cache.
   */
  get synced(): Promise<void> {
    return this.syncedRun;
  }

  private nextSync(): Promise<void> {
    return new Promise<void>((resolve) => (this.syncedOnce = resolve));
  }

  constructor(
    private readonly cluster: ClusterPort,
    readonly kind: SluiceKind,
    private readonly onChange: (object: T, deleted: boolean) => void,
    private readonly log: Logger,
    private readonly namespace?: string,
  ) {}

  static key(o: { metadata: { namespace: string; name: string } }): string {
    return `${o.metadata.namespace}/${o.metadata.name}`;
  }

  /**
   * An object the operator just wrote, as the API server answered: cached at
   * once, so that the next reconcile (a worker event may come before the
   * watch event) plans from it rather than from the version before its own
   * write, and logs each state transition once. The watch event that
   * follows changes nothing; an older one is ignored.
   */
  observe(o: T): void {
    const key = Informer.key(o);
    const cached = this.cache.get(key);
    if (cached && !older(cached, o)) return;
    this.cache.set(key, o);
  }

  async run(signal: AbortSignal): Promise<void> {
    this.syncedRun = this.nextSync();
    let failures = 0;
    while (!signal.aborted) {
      try {
        const list = await this.cluster.list<T>(this.kind, this.namespace);
        const seen = new Set<string>();
        for (const o of list.items) {
          const key = Informer.key(o);
          seen.add(key);
          this.cache.set(key, o);
          this.onChange(o, false);
        }
        for (const [key, o] of this.cache) {
          if (!seen.has(key)) {
            this.cache.delete(key);
            this.onChange(o, true);
          }
        }
        this.syncedOnce();
        failures = 0;
        await this.cluster.watch<T>(
          this.kind,
          list.resourceVersion,
          (event) => {
            const key = Informer.key(event.object);
            if (this.namespace !== undefined && event.object.metadata.namespace !== this.namespace) return;
            if (event.type === 'DELETED') {
              this.cache.delete(key);
              this.onChange(event.object, true);
              return;
            }
            // The operator's own write may be cached already (observe): never go back past it.
            const cached = this.cache.get(key);
            const latest = cached && older(event.object, cached) ? cached : event.object;
            this.cache.set(key, latest);
            this.onChange(latest, false);
          },
          signal,
        );
      } catch (error) {
        if (signal.aborted) return;
        if (!(error instanceof ExpiredError)) {
          failures++;
          this.log.warn(
            { kind: this.kind, err: (error as Error).message },
            'watch failed; relisting after back-off',
          );
          await abortableSleep(Math.min(30_000, 200 * 2 ** failures), signal);
        }
      }
    }
  }
}

/** Whether `a` is an older version of the object than `b` (resourceVersions that are numbers, as etcd's and the embedded cluster's are). */
function older(a: ClusterObject, b: ClusterObject): boolean {
  const ra = a.metadata.resourceVersion;
  const rb = b.metadata.resourceVersion;
  if (!ra || !rb || !/^\d+$/.test(ra) || !/^\d+$/.test(rb)) return false;
  return BigInt(ra) < BigInt(rb);
}
