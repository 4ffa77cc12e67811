/** Timestamps come back as Date from pg and PGlite (or strings from jsonb); the API speaks ISO 8601. */
export const toIso = (d: Date | string): string => new Date(d).toISOString();
export const toIsoOrNull = (d: Date | string | null): string | null => (d === null ? null : toIso(d));
