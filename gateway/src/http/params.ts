import { Type } from '@sinclair/typebox';
import { Uuid } from '@sluice/shared/schemas';

/** Path parameters used across features: a malformed UUID is a 422 with its `loc`. */
export const IdParams = Type.Object({ id: Uuid });
export const TeamMemberParams = Type.Object({ id: Uuid, user_id: Uuid });
