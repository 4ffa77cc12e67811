import { createHash } from 'node:crypto';

// The PostgreSQL capture's object names, known to both sides: the worker
// creates the slot and publication, the control plane releases them when a
// source is deleted and measures the slot while no worker reads it.

/**
 * The slot and publication names of a connector: the configured ones, else
 * `sluice_<connector id, lower-cased, other characters as _, at most 46>_<8
 * hex of its SHA-256>` (the hash keeps two ids that clean up alike apart).
 */
export function cdcNames(
  connectorId: string,
  settings: { slot_name?: string; publication_name?: string } = {},
): { slot: string; publication: string } {
  const clean = connectorId
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 46);
  const hash = createHash('sha256').update(connectorId).digest('hex').slice(0, 8);
  const generated = `sluice_${clean}_${hash}`;
  return { slot: settings.slot_name ?? generated, publication: settings.publication_name ?? generated };
}
