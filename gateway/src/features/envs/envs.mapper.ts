import { type SecretBox } from '@sluice/shared/crypto';
import { REDACTED, type EnvRead, type RetentionConfiguration } from '@sluice/shared/schemas';
import type { EnvRow } from '../../db/schema.js';
import { toIso } from '../../db/timestamps.js';

const parseJson = (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v);

/** The broker password never leaves the service: it reads back as `<redacted>`. */
export function toEnvRead(e: EnvRow): EnvRead {
  const cfg = parseJson(e.retention_configuration) as RetentionConfiguration | null;
  return {
    id: e.id,
    name: e.name,
    description: e.description,
    use_retention: e.use_retention,
    retention_configuration: cfg ? { ...cfg, ...(e.broker_secret ? { sasl_password: REDACTED } : {}) } : null,
    created_at: toIso(e.created_at),
    updated_at: toIso(e.updated_at),
  };
}

/**
 * Splits broker settings into what is stored in the clear and the sealed
 * password. Sending `<redacted>` back keeps the stored password.
 */
export function splitBrokerSecret(
  secrets: SecretBox,
  cfg: RetentionConfiguration | null | undefined,
  existing: string | null,
): { config: Omit<RetentionConfiguration, 'sasl_password'> | null; secret: string | null } {
  if (!cfg) return { config: null, secret: null };
  const { sasl_password, ...config } = cfg;
  if (sasl_password === undefined || sasl_password === null) return { config, secret: null };
  return { config, secret: sasl_password === REDACTED ? existing : secrets.seal(sasl_password) };
}
