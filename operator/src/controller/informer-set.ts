import type { ClusterObject, ClusterPort, SluiceKind } from '@sluice/shared/ports';
import { Informer } from './informer.js';
import type { Logger } from './logger.js';

/**
 * One kind across the namespaces the operator reconciles: an informer per
 * namespace (a Role-scoped install may not list cluster-wide), or one for
 * all namespaces. Reads go to the informer of the key's namespace.
 */
export class InformerSet<T extends ClusterObject = ClusterObject> {
  private readonly byNamespace = new Map<string, Informer<T>>();
  private readonly all?: Informer<T>;

  constructor(
    kind: SluiceKind,
    namespaces: readonly string[] | undefined,
    clusterFor: (namespace: string | undefined) => ClusterPort,
    onChange: (object: T, deleted: boolean) => void,
    log: Logger,
  ) {
    if (namespaces === undefined) {
      this.all = new Informer<T>(clusterFor(undefined), kind, onChange, log);
    } else {
      for (const ns of new Set(namespaces)) {
        this.byNamespace.set(ns, new Informer<T>(clusterFor(ns), kind, onChange, log, ns));
      }
    }
  }

  private informers(): Informer<T>[] {
    return this.all ? [this.all] : [...this.byNamespace.values()];
  }

  /** By `namespace/name`. */
  get(key: string): T | undefined {
    if (this.all) return this.all.cache.get(key);
    return this.byNamespace.get(key.slice(0, key.indexOf('/')))?.cache.get(key);
  }

  /** An object the operator wrote (Informer.observe). */
  observe(o: T): void {
    const informer = this.all ?? this.byNamespace.get(o.metadata.namespace);
    informer?.observe(o);
  }

  *values(): IterableIterator<T> {
    for (const informer of this.informers()) yield* informer.cache.values();
  }

  get synced(): Promise<void> {
    return Promise.all(this.informers().map((i) => i.synced)).then(() => undefined);
  }

  run(signal: AbortSignal): Promise<void> {
    return Promise.all(this.informers().map((i) => i.run(signal))).then(() => undefined);
  }
}
