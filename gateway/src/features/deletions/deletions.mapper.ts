import type { DeletionProgress, DeletionRead, DeletionStep } from '@sluice/shared/schemas';
import type { DeletionRow } from '../../db/schema.js';
import { toIso, toIsoOrNull } from '../../db/timestamps.js';
import { emptyProgress } from './deletions.repository.js';

export function toDeletionRead(r: DeletionRow): DeletionRead {
  return {
    id: r.id,
    kind: r.kind,
    target_id: r.target_id,
    target_name: r.target_name,
    env_id: r.env_id,
    team_ids: r.team_ids,
    state: r.state,
    step: r.step as DeletionStep | null,
    progress: { ...emptyProgress(), ...(r.progress as DeletionProgress) },
    message: r.message,
    attempts: r.attempts,
    requested_by: r.requested_by,
    created_at: toIso(r.created_at),
    started_at: toIsoOrNull(r.started_at),
    finished_at: toIsoOrNull(r.finished_at),
  };
}
