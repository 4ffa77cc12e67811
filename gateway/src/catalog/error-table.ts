import type { ErrorTable } from '@sluice/shared/catalog';
import type { GatewayContext } from '../context.js';
import { unprocessable, type ValidationIssue } from '../http/errors.js';
import { findConnector } from '../features/connectors/connectors.repository.js';

export interface ErrorTableFields {
  error_table_enabled?: boolean;
  error_table_name?: string | null;
  error_table_target_id?: string | null;
}

/**
 * The error-table setting of a data model or subscription after a change
 * (spec 2.8, 2.9): enabled needs a name; the target, when given, is a target
 * connector of the same team. `loc` locates the fields in the request.
 */
export async function nextErrorTable(
  ctx: GatewayContext,
  teamId: string,
  current: ErrorTable,
  change: ErrorTableFields,
  loc: (string | number)[],
  prefix = 'error_table_',
): Promise<ErrorTable> {
  const next: ErrorTable = { enabled: change.error_table_enabled ?? current.enabled };
  const name = change.error_table_name === undefined ? current.name : (change.error_table_name ?? undefined);
  const target =
    change.error_table_target_id === undefined
      ? current.targetConnectorId
      : (change.error_table_target_id ?? undefined);
  if (name) next.name = name;
  if (target) next.targetConnectorId = target;
  const issues: ValidationIssue[] = [];
  if (next.enabled && !next.name) {
    issues.push({
      loc: [...loc, `${prefix}name`],
      msg: 'An enabled error table needs a name',
      type: 'missing',
    });
  }
  if (target && target !== current.targetConnectorId) {
    const row = await findConnector(ctx.db, target);
    if (!row || row.team_id !== teamId || row.direction !== 'target') {
      issues.push({
        loc: [...loc, `${prefix}target_id`],
        msg: 'Not a target connector of this team',
        type: 'value_error',
      });
    }
  }
  if (issues.length > 0) throw unprocessable(issues);
  return next;
}
