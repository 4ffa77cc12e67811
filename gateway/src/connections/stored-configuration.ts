import { type ConnectorResource } from '@sluice/shared/catalog';
import {
  changedDestination,
  isSecretRef,
  secretPaths,
  withConnectorDefaults,
  type ConnectorTypeDef,
} from '@sluice/shared/connectors';
import { managedSecretName, SecretNotFoundError, type SecretScope } from '@sluice/shared/ports';
import { REDACTED } from '@sluice/shared/schemas';
import { secretSlots, setAt, valueAt } from '@sluice/shared/secrets';
import type { GatewayContext } from '../context.js';
import { referenceMessage, teamSecretScope } from '../catalog/secrets.js';
import { unprocessable, type ValidationIssue } from '../http/errors.js';
import { findConnector } from '../features/connectors/connectors.repository.js';

// A connector's configuration with its secrets resolved, for the gateway's
// own connections to the connector's system. The values live in the returned
// object only, for the time of the work; a reference the scope may not use is
// a 422 at its field.

type Config = Record<string, unknown>;

/** A stored connector: its id, team and configuration (secret fields as stored). */
export interface StoredConnector {
  id: string;
  teamId: string;
  config: Config;
}

/**
 * Replaces the secret fields of `config` by their values: `<redacted>` by the
 * stored connector's (unless the check goes to another destination than the
 * stored one), `valueFrom` by the worker namespace's when `scope` is granted
 * the secret (the connector's team, or with no connector the caller's
 * teams). The values live in this object only, for the time of the check.
 */
export async function resolveSecretFields(
  ctx: Pick<GatewayContext, 'config' | 'secretStore'>,
  def: ConnectorTypeDef,
  config: Config,
  stored: StoredConnector | undefined,
  scope: SecretScope,
  loc: (string | number)[],
): Promise<Config> {
  const out = structuredClone(config);
  const issues: ValidationIssue[] = [];
  const moved =
    stored && stored.config !== config ? changedDestination(def.type, stored.config, config) : undefined;
  for (const slot of secretSlots(config, secretPaths(def.type))) {
    let value = slot.value;
    const at = [...loc, ...slot.loc];
    if (value === REDACTED) {
      if (!stored) {
        issues.push({
          loc: at,
          msg: `"${REDACTED}" stands for a stored value: add ?connector_id=<the connector> or send the value`,
          type: 'missing',
        });
        continue;
      }
      if (moved) {
        issues.push({
          loc: at,
          msg: `"${REDACTED}" cannot use the stored value: ${slot.loc.join('.')} is required again because ${moved} changed`,
          type: 'missing',
        });
        continue;
      }
      value = valueAt(stored.config, slot.loc);
      if (value === undefined) {
        issues.push({ loc: at, msg: 'The stored connector has no value for this field', type: 'missing' });
        continue;
      }
    }
    if (!isSecretRef(value)) {
      if (value !== undefined) setAt(out, slot.loc, value);
      continue;
    }
    try {
      setAt(
        out,
        slot.loc,
        await ctx.secretStore.resolve(ctx.config.workerNamespace, value.valueFrom.secretKeyRef, scope),
      );
    } catch (e) {
      if (!(e instanceof SecretNotFoundError)) throw e;
      issues.push({ loc: at, msg: referenceMessage(e), type: 'value_error' });
    }
  }
  if (issues.length) throw unprocessable(issues);
  return out;
}

/**
 * A stored connector's configuration with its secrets resolved and defaults
 * filled (no access check: for the gateway's own clean-up on delete).
 */
export async function resolvedStoredConfiguration(
  ctx: Pick<GatewayContext, 'config' | 'db' | 'secretStore' | 'catalog'>,
  def: ConnectorTypeDef,
  id: string,
  configuration: Config,
): Promise<Config> {
  const row = await findConnector(ctx.db, id);
  // The mirror row may be gone in a clean-up: the catalog object still names its team.
  const teamId =
    (row?.team_id as string | undefined) ??
    (await ctx.catalog.get<ConnectorResource>('Connector', id))?.spec.teamId ??
    '';
  const stored = {
    id,
    teamId,
    config: structuredClone(configuration),
  };
  const scope = await teamSecretScope(ctx, [stored.teamId], [managedSecretName('connector', id)]);
  return withConnectorDefaults(
    def.type,
    await resolveSecretFields(ctx, def, stored.config, stored, scope, []),
  );
}
