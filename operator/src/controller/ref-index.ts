/**
 * Which objects point at which: for each object key the references it holds
 * (e.g. `ns/connectorId`), and the reverse, so "every pipeline of this
 * connector" is a lookup rather than a scan of the whole cache (10,000
 * objects in bench/operator).
 */
export class RefIndex {
  private readonly refsOf = new Map<string, readonly string[]>();
  private readonly keysOf = new Map<string, Set<string>>();

  /** Sets the references `key` holds now (none: it is gone). */
  set(key: string, refs: readonly string[]): void {
    for (const ref of this.refsOf.get(key) ?? []) {
      const keys = this.keysOf.get(ref);
      keys?.delete(key);
      if (keys?.size === 0) this.keysOf.delete(ref);
    }
    if (refs.length === 0) {
      this.refsOf.delete(key);
      return;
    }
    this.refsOf.set(key, refs);
    for (const ref of refs) {
      let keys = this.keysOf.get(ref);
      if (!keys) this.keysOf.set(ref, (keys = new Set()));
      keys.add(key);
    }
  }

  /** The keys of the objects that reference `ref`. */
  get(ref: string): readonly string[] {
    return [...(this.keysOf.get(ref) ?? [])];
  }
}
