/** The subscribers of a worker runtime (`WorkerRuntimePort.subscribe`), told a worker's id on each change. */
export class WorkerListeners {
  private readonly listeners = new Set<(id: string) => void>();

  subscribe(listener: (id: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(id: string): void {
    for (const listener of this.listeners) listener(id);
  }
}
