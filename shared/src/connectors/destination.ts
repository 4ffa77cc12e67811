import { requireConnectorType } from './registry.js';
import { withConnectorDefaults } from './validate.js';

// Where a configuration sends its credentials. A write that changes one of
// these fields cannot keep a stored secret with `<redacted>`: whoever points
// a connector at a new host must give its credentials again, or any member
// of the team could send the stored password to a host of their choosing.

/** Field names that say where a connector connects, whatever its type. */
const DESTINATION_FIELD_NAMES: readonly string[] = [
  'host',
  'port',
  'hosts',
  'srv',
  'url',
  'nodes',
  'bootstrap_servers',
  'bootstrap_server',
  'account',
  'ssh_host',
  'ssh_port',
  // The bastion's expected host key: another key is another party to trust.
  'ssh_host_key',
];

/** The destination fields of a type's configuration (the fields its schema has among DESTINATION_FIELD_NAMES). */
export function destinationFields(type: string): string[] {
  const props = requireConnectorType(type).schema.properties as Record<string, unknown>;
  return DESTINATION_FIELD_NAMES.filter((name) => Object.hasOwn(props, name));
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The first destination field whose value differs between the stored
 * configuration and the new one (defaults filled on both sides, so an
 * omitted default port is no change), or undefined.
 */
export function changedDestination(
  type: string,
  previous: Record<string, unknown> | null | undefined,
  next: Record<string, unknown>,
): string | undefined {
  if (!previous) return undefined;
  const before = withConnectorDefaults(type, previous);
  const after = withConnectorDefaults(type, next);
  return destinationFields(type).find((f) => !same(before[f], after[f]));
}

/** The destination of a warehouse: its body field and the spec key that stores it. */
export const WAREHOUSE_DESTINATION_FIELDS = [
  { field: 'server_hostname', setting: 'serverHostname' },
] as const;
