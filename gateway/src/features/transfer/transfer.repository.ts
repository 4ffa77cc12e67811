import type { Db } from '../../db/database.js';

/**
 * Everything the export document holds, in one consistent read (caller opens the transaction).
 * Service accounts are not in the document, so neither are their memberships: the
 * document must only reference users it contains.
 */
export async function readAll(db: Db) {
  const people = db.selectFrom('users').select('id').where('is_service_account', '=', false);
  const [users, envs, teams, envMembers, teamMembers] = await Promise.all([
    db.selectFrom('users').selectAll().where('is_service_account', '=', false).orderBy('email').execute(),
    db.selectFrom('envs').selectAll().orderBy('name').execute(),
    db.selectFrom('teams').selectAll().orderBy('name').execute(),
    db.selectFrom('env_members').selectAll().where('user_id', 'in', people).execute(),
    db.selectFrom('team_members').selectAll().where('user_id', 'in', people).execute(),
  ]);
  return { users, envs, teams, envMembers, teamMembers };
}

export async function secretsById(db: Db) {
  const [users, envs] = await Promise.all([
    db.selectFrom('users').select(['id', 'hashed_password']).execute(),
    db.selectFrom('envs').select(['id', 'broker_secret']).execute(),
  ]);
  return {
    passwords: new Map(users.map((u) => [u.id, u.hashed_password])),
    brokerSecrets: new Map(envs.map((e) => [e.id, e.broker_secret])),
  };
}

/** Empties the identity tables; memberships, tokens and keys go by cascade. */
export async function deleteAll(db: Db): Promise<void> {
  await db.updateTable('users').set({ active_env_id: null }).execute();
  await db.deleteFrom('teams').execute();
  await db.deleteFrom('envs').execute();
  await db.deleteFrom('users').execute();
}

export async function insertAll(
  db: Db,
  data: {
    users: {
      id: string;
      email: string;
      hashed_password: string;
      is_active: boolean;
      is_superuser: boolean;
      is_verified: boolean;
    }[];
    envs: {
      id: string;
      name: string;
      description: string | null;
      use_retention: boolean;
      retention_configuration: string | null;
      broker_secret: string | null;
    }[];
    teams: { id: string; env_id: string; name: string; description: string | null }[];
    envMembers: { user_id: string; env_id: string; admin: boolean }[];
    teamMembers: { user_id: string; team_id: string; admin: boolean }[];
    activeEnv: { id: string; env: string }[];
  },
): Promise<void> {
  if (data.users.length) await db.insertInto('users').values(data.users).execute();
  if (data.envs.length) await db.insertInto('envs').values(data.envs).execute();
  if (data.teams.length) await db.insertInto('teams').values(data.teams).execute();
  if (data.envMembers.length) await db.insertInto('env_members').values(data.envMembers).execute();
  if (data.teamMembers.length) await db.insertInto('team_members').values(data.teamMembers).execute();
  for (const a of data.activeEnv) {
    await db.updateTable('users').set({ active_env_id: a.env }).where('id', '=', a.id).execute();
  }
}
