import type { GatewayContext } from '../../context.js';
import { findUserByEmail, insertUser, updateUser } from './users.repository.js';

/**
 * SLUICE_ADMIN_EMAIL + SLUICE_ADMIN_PASSWORD: make sure that account exists
 * as an active, verified superuser with that password, so a fresh install is
 * usable without touching the database. Runs at every start.
 */
export async function ensureAdmin(ctx: GatewayContext): Promise<void> {
  const { adminEmail: email, adminPassword: password } = ctx.config;
  if (!email || !password) return;
  ctx.passwords.check(password, 'SLUICE_ADMIN_PASSWORD');
  const hashed_password = await ctx.passwords.hash(password);
  const flags = { is_active: true, is_superuser: true, is_verified: true };
  const existing = await findUserByEmail(ctx.db, email);
  if (existing) await updateUser(ctx.db, existing.id, { ...flags, hashed_password });
  else {
    await insertUser(ctx.db, {
      email,
      hashed_password,
      ...flags,
      active_env_id: null,
      tokens_valid_after: null,
    });
  }
  ctx.log.info({ email }, existing ? 'Admin account updated' : 'Admin account created');
}
