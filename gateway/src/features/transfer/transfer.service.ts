import { type ExportData, type RetentionConfiguration } from '@sluice/shared/schemas';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { unprocessable, type ValidationIssue } from '../../http/errors.js';
import { splitBrokerSecret, toEnvRead } from '../envs/envs.mapper.js';
import { toUserRead } from '../users/users.mapper.js';
import * as repo from './transfer.repository.js';
import { unusablePassword } from '../users/users.service.js';
import { recordDroppedTeams, startDeletions } from '../deletions/deletions.service.js';

export async function exportAll(ctx: GatewayContext): Promise<ExportData> {
  const all = await ctx.db.transaction().execute((trx) => repo.readAll(trx));
  return {
    users: all.users.map(toUserRead),
    envs: all.envs.map((e) => {
      const r = toEnvRead(e);
      return {
        id: r.id,
        name: r.name,
        description: r.description,
        use_retention: r.use_retention,
        retention_configuration: r.retention_configuration,
      };
    }),
    teams: all.teams.map((t) => ({ id: t.id, name: t.name, description: t.description, env_id: t.env_id })),
    env_members: all.envMembers,
    team_members: all.teamMembers,
  };
}

/** Every reason the document cannot be imported, before anything is touched. */
function checkDocument(data: ExportData, p: Principal): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const dup = <T>(list: T[], key: (t: T) => string, loc: string, what: string) => {
    const seen = new Set<string>();
    list.forEach((item, i) => {
      const k = key(item);
      if (seen.has(k)) issues.push({ loc: ['body', loc, i], msg: `Duplicate ${what}`, type: 'value_error' });
      seen.add(k);
    });
  };
  dup(data.users, (u) => u.id, 'users', 'user id');
  dup(data.users, (u) => u.email.toLowerCase(), 'users', 'e-mail');
  dup(data.envs, (e) => e.id, 'envs', 'environment id');
  dup(data.envs, (e) => e.name, 'envs', 'environment name');
  dup(data.teams, (t) => t.id, 'teams', 'team id');
  dup(data.teams, (t) => `${t.env_id}/${t.name}`, 'teams', 'team name in its environment');
  dup(data.env_members, (m) => `${m.user_id}/${m.env_id}`, 'env_members', 'membership');
  dup(data.team_members, (m) => `${m.user_id}/${m.team_id}`, 'team_members', 'membership');
  const users = new Set(data.users.map((u) => u.id));
  const envs = new Set(data.envs.map((e) => e.id));
  const teams = new Set(data.teams.map((t) => t.id));
  const ref = (ok: boolean, loc: (string | number)[], msg: string) => {
    if (!ok) issues.push({ loc: ['body', ...loc], msg, type: 'value_error' });
  };
  data.users.forEach((u, i) =>
    ref(
      u.active_env_id === null || envs.has(u.active_env_id),
      ['users', i, 'active_env_id'],
      'Unknown environment',
    ),
  );
  data.teams.forEach((t, i) =>
    ref(
      t.env_id !== null && envs.has(t.env_id),
      ['teams', i, 'env_id'],
      'A team must belong to an environment of the document',
    ),
  );
  data.env_members.forEach((m, i) => {
    ref(users.has(m.user_id), ['env_members', i, 'user_id'], 'Unknown user');
    ref(envs.has(m.env_id), ['env_members', i, 'env_id'], 'Unknown environment');
  });
  data.team_members.forEach((m, i) => {
    ref(users.has(m.user_id), ['team_members', i, 'user_id'], 'Unknown user');
    ref(teams.has(m.team_id), ['team_members', i, 'team_id'], 'Unknown team');
  });
  const me = data.users.find((u) => u.id === p.user.id);
  ref(
    Boolean(me?.is_superuser && me.is_active),
    ['users'],
    'The document must keep your own account as an active superuser',
  );
  return issues;
}

/**
 * Replaces users, environments, teams and memberships with the document, in
 * one transaction: a bad document changes nothing. Passwords and broker
 * secrets are not in exports; they are kept for ids that already exist (a
 * `<redacted>` broker password keeps the stored one); new users must reset
 * their password. Service accounts and API keys are not part of the document
 * and are removed. Teams the document leaves out are deleted with everything
 * they own, as `DELETE /teams/{id}` and `DELETE /envs/{id}` do.
 */
export async function importAll(ctx: GatewayContext, p: Principal, data: ExportData): Promise<void> {
  const issues = checkDocument(data, p);
  if (issues.length) throw unprocessable(issues);
  const deletions = await ctx.db.transaction().execute(async (trx) => {
    const old = await repo.secretsById(trx);
    // Teams the document leaves out are deleted as DELETE /teams/{id} does: in this transaction.
    const dropped = await recordDroppedTeams(trx, data, p.user.id);
    await repo.deleteAll(trx);
    await repo.insertAll(trx, {
      users: data.users.map((u) => ({
        id: u.id,
        email: u.email.toLowerCase(),
        hashed_password: old.passwords.get(u.id) ?? unusablePassword(),
        is_active: u.is_active,
        is_superuser: u.is_superuser,
        is_verified: u.is_verified,
      })),
      envs: data.envs.map((e) => {
        const { config, secret } = splitBrokerSecret(
          ctx.secrets,
          e.retention_configuration as RetentionConfiguration | null,
          old.brokerSecrets.get(e.id) ?? null,
        );
        return {
          id: e.id,
          name: e.name,
          description: e.description ?? null,
          use_retention: e.use_retention,
          retention_configuration: config === null ? null : JSON.stringify(config),
          broker_secret: secret,
        };
      }),
      teams: data.teams.map((t) => ({
        id: t.id,
        env_id: t.env_id as string,
        name: t.name,
        description: t.description,
      })),
      envMembers: data.env_members,
      teamMembers: data.team_members,
      activeEnv: data.users
        .filter((u) => u.active_env_id)
        .map((u) => ({ id: u.id, env: u.active_env_id as string })),
    });
    return dropped;
  });
  startDeletions(ctx, deletions);
}
