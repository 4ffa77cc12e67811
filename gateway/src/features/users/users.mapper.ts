import type { UserRead } from '@sluice/shared/schemas';
import type { UserRow } from '../../db/schema.js';

export function toUserRead(u: UserRow): UserRead {
  return {
    id: u.id,
    email: u.email,
    is_active: u.is_active,
    is_superuser: u.is_superuser,
    is_verified: u.is_verified,
    active_env_id: u.active_env_id,
  };
}

/**
 * Another user as a non-superuser sees them: who they are, not what they may
 * do or where they work. `is_superuser` reads false and `active_env_id` null
 * whatever they are (docs/api.md, "Permissions").
 */
export function toOtherUserRead(u: UserRow): UserRead {
  return { ...toUserRead(u), is_superuser: false, active_env_id: null };
}
