import type { UserRead } from '@sluice/shared';
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
