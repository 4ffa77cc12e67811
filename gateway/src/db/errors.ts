/** PostgreSQL's unique_violation (SQLSTATE 23505), as both pg and PGlite report it. */
export const isUniqueViolation = (err: unknown): boolean =>
  (err as { code?: string } | null)?.code === '23505';
