import { LeaseConflictError, type LeaseRecord, type LeaseStore } from './leader-election.js';

/**
 * A lease held in this process: for unit tests, and for the single-process
 * embedded mode where there is no API server but the same elector code runs.
 * Conflicts behave as the API server's do for a Lease: create fails if the
 * lease exists; update fails unless it names the current resourceVersion (or
 * none, which is an unconditional update), and creates the lease if it is gone
 * (Leases allow create-on-update); every write gets a new resourceVersion.
 * Records are copied in and out, so callers cannot change what is stored.
 */
export class MemoryLeaseStore implements LeaseStore {
  #record: LeaseRecord | undefined;
  #version = 0;

  async get(): Promise<LeaseRecord | undefined> {
    return this.#record ? { ...this.#record } : undefined;
  }

  async create(record: LeaseRecord): Promise<LeaseRecord> {
    if (this.#record) throw new LeaseConflictError('already-exists', 'the lease already exists');
    return this.#write(record);
  }

  async update(record: LeaseRecord): Promise<LeaseRecord> {
    if (!this.#record) return this.#write(record);
    if (record.resourceVersion !== undefined && record.resourceVersion !== this.#record.resourceVersion) {
      throw new LeaseConflictError(
        'conflict',
        `the lease was modified: resourceVersion ${record.resourceVersion} is not the current ${this.#record.resourceVersion}`,
      );
    }
    return this.#write(record);
  }

  /** Removes the lease, as deleting the Lease object would. */
  delete(): void {
    this.#record = undefined;
  }

  #write(record: LeaseRecord): LeaseRecord {
    this.#version += 1;
    this.#record = { ...record, resourceVersion: String(this.#version) };
    return { ...this.#record };
  }
}
