import type { DeletionListQuery, DeletionRead } from '@sluice/shared/schemas';
import { requireSuperuser } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import type { Db } from '../../db/database.js';
import { notFound } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { toDeletionRead } from './deletions.mapper.js';
import * as repo from './deletions.repository.js';
import { deletionRunner } from './deletions.runner.js';

// Deleting a team or an environment (docs/api.md "Deletions"): the row goes
// in the request's transaction, together with a recorded deletion naming the
// teams, so the team (or environment) and every object of its teams are
// invisible at once — catalog reads only show objects of existing teams
// (auth/visibility.ts) — and the runner removes the objects in the background.

/** Records the deletion of one team (caller's transaction, which then deletes the team row). */
export function recordTeamDeletion(
  trx: Db,
  team: { id: string; env_id: string; name: string },
  requestedBy: string | null,
): Promise<string> {
  return repo.insertDeletion(trx, {
    kind: 'team',
    target_id: team.id,
    target_name: team.name,
    env_id: team.env_id,
    team_ids: [team.id],
    requested_by: requestedBy,
  });
}

/** Records the deletion of an environment and its teams (caller's transaction, which then deletes the row). */
export async function recordEnvDeletion(
  trx: Db,
  env: { id: string; name: string },
  requestedBy: string | null,
  keptTeams: ReadonlySet<string> = new Set(),
): Promise<string> {
  const teams = await repo.teamIdsOfEnv(trx, env.id);
  return repo.insertDeletion(trx, {
    kind: 'env',
    target_id: env.id,
    target_name: env.name,
    env_id: env.id,
    team_ids: teams.filter((t) => !keptTeams.has(t)),
    requested_by: requestedBy,
  });
}

/**
 * An import replaces every team (caller's transaction, before it empties the
 * tables): each environment the document leaves out is an environment
 * deletion with its teams (but those the document keeps elsewhere), each
 * other team it leaves out a team deletion.
 */
export async function recordDroppedTeams(
  trx: Db,
  doc: { envs: { id: string }[]; teams: { id: string }[] },
  requestedBy: string | null,
): Promise<string[]> {
  const keptEnvs = new Set(doc.envs.map((e) => e.id));
  const keptTeams = new Set(doc.teams.map((t) => t.id));
  const ids: string[] = [];
  for (const env of await repo.allEnvs(trx)) {
    if (!keptEnvs.has(env.id)) ids.push(await recordEnvDeletion(trx, env, requestedBy, keptTeams));
  }
  for (const team of await repo.allTeams(trx)) {
    if (keptEnvs.has(team.env_id) && !keptTeams.has(team.id)) {
      ids.push(await recordTeamDeletion(trx, team, requestedBy));
    }
  }
  return ids;
}

/**
 * After the commit: starts the deletions at once on this replica when it
 * runs the periodic jobs; otherwise the next tick of one that does takes them.
 */
export function startDeletions(ctx: GatewayContext, ids: string[]): void {
  const runner = deletionRunner(ctx);
  if (!runner.started) return;
  for (const id of ids) {
    void runner
      .launch(id)
      .catch((err: unknown) =>
        ctx.log.warn({ deletion: id, err: (err as Error).message }, 'A deletion could not be started here'),
      );
  }
}

export async function listDeletions(ctx: GatewayContext, p: Principal, q: DeletionListQuery) {
  requireSuperuser(p);
  const { rows, total } = await repo.listDeletions(ctx.db, {
    state: q.state,
    offset: offsetOf(q.page, q.size),
    limit: q.size,
  });
  return pageOf(rows.map(toDeletionRead), total, q.page, q.size);
}

export async function getDeletion(ctx: GatewayContext, p: Principal, id: string): Promise<DeletionRead> {
  requireSuperuser(p);
  const row = await repo.findDeletion(ctx.db, id);
  if (!row) throw notFound('Deletion not found');
  return toDeletionRead(row);
}
