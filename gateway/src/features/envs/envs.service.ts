import {
  REDACTED,
  type EnvCreate,
  type EnvRead,
  type EnvUpdate,
  type RetentionConfiguration,
  USER_PASSWORD_MECHANISMS,
} from '@sluice/shared/schemas';
import { requireEnv } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { conflict, notFound, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { splitBrokerSecret, toEnvRead } from './envs.mapper.js';
import * as repo from './envs.repository.js';
import { recordEnvDeletion, startDeletions } from '../deletions/deletions.service.js';
import { isUniqueViolation } from '../../db/errors.js';

const nameTaken = () => conflict('An environment with this name already exists');

/** Rules across fields of the broker settings, which a JSON Schema cannot say clearly. */
function checkBroker(
  useRetention: boolean,
  cfg: RetentionConfiguration | null | undefined,
  hasStoredSecret: boolean,
) {
  const issues: ValidationIssue[] = [];
  const loc = ['body', 'retention_configuration'];
  if (useRetention && !cfg) {
    issues.push({
      loc,
      msg: 'use_retention needs the broker settings that store the retention',
      type: 'missing',
    });
  }
  if (cfg?.security_protocol?.startsWith('SASL')) {
    if (!cfg.sasl_mechanism)
      issues.push({
        loc: [...loc, 'sasl_mechanism'],
        msg: `Required with ${cfg.security_protocol}`,
        type: 'missing',
      });
    const userPass = (USER_PASSWORD_MECHANISMS as readonly string[]).includes(cfg.sasl_mechanism ?? '');
    if (userPass && !cfg.sasl_username)
      issues.push({
        loc: [...loc, 'sasl_username'],
        msg: `Required with ${cfg.sasl_mechanism}`,
        type: 'missing',
      });
    if (userPass && !cfg.sasl_password && !hasStoredSecret) {
      issues.push({
        loc: [...loc, 'sasl_password'],
        msg: `Required with ${cfg.sasl_mechanism}`,
        type: 'missing',
      });
    }
  }
  if (issues.length) throw unprocessable(issues);
}

export async function listEnvs(ctx: GatewayContext, p: Principal, q: { page: number; size: number }) {
  const { rows, total } = await repo.listEnvs(ctx.db, {
    memberId: p.user.is_superuser ? null : p.user.id,
    offset: offsetOf(q.page, q.size),
    limit: q.size,
  });
  return pageOf(rows.map(toEnvRead), total, q.page, q.size);
}

export async function getEnv(ctx: GatewayContext, p: Principal, id: string): Promise<EnvRead> {
  return toEnvRead(await requireEnv(ctx.db, p, id, 'member'));
}

export async function findEnvByName(ctx: GatewayContext, p: Principal, name: string): Promise<EnvRead> {
  const env = await repo.findEnvByName(ctx.db, name);
  if (!env) throw notFound('Environment not found');
  return toEnvRead(await requireEnv(ctx.db, p, env.id, 'member'));
}

/** Any user may create one; the creator is its admin, and it becomes their active env if they had none. */
export async function createEnv(ctx: GatewayContext, p: Principal, body: EnvCreate): Promise<EnvRead> {
  checkBroker(body.use_retention ?? false, body.retention_configuration, false);
  const { config, secret } = splitBrokerSecret(ctx.secrets, body.retention_configuration, null);
  try {
    const env = await ctx.db.transaction().execute(async (trx) => {
      const env = await repo.insertEnv(trx, {
        name: body.name,
        description: body.description ?? null,
        use_retention: body.use_retention ?? false,
        retention_configuration: config,
        broker_secret: secret,
      });
      await repo.addEnvMember(trx, p.user.id, env.id, true);
      await repo.setActiveEnvIfUnset(trx, [p.user.id], env.id);
      return env;
    });
    return toEnvRead(env);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

/**
 * `<redacted>` keeps the stored broker password only for the same brokers:
 * pointed at other brokers, the password must be given again, or any admin
 * of the environment could send it to a host of their choosing.
 */
function refuseMovedBrokerPassword(
  before: RetentionConfiguration | null | undefined,
  next: RetentionConfiguration | null | undefined,
): void {
  if (!before || next?.sasl_password !== REDACTED) return;
  const brokers = (c: RetentionConfiguration) =>
    c.bootstrap_servers ?? (c as { bootstrap_server?: string }).bootstrap_server;
  if (brokers(before) === brokers(next)) return;
  throw unprocessable([
    {
      loc: ['body', 'retention_configuration', 'sasl_password'],
      msg: `"${REDACTED}" cannot keep the stored password: sasl_password is required again because bootstrap_servers changed`,
      type: 'missing',
    },
  ]);
}

export async function updateEnv(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: EnvUpdate,
): Promise<EnvRead> {
  const env = await requireEnv(ctx.db, p, id, 'admin');
  const patch: Parameters<typeof repo.updateEnv>[2] = {};
  if (body.name !== undefined) patch.name = body.name;
  if (body.description !== undefined) patch.description = body.description;
  if (body.use_retention !== undefined) patch.use_retention = body.use_retention;
  const nextCfg =
    body.retention_configuration !== undefined
      ? body.retention_configuration
      : (toEnvRead(env).retention_configuration ?? null);
  checkBroker(body.use_retention ?? env.use_retention, nextCfg, env.broker_secret !== null);
  refuseMovedBrokerPassword(toEnvRead(env).retention_configuration, body.retention_configuration);
  if (body.retention_configuration !== undefined) {
    // Replaced as a whole, like connector configurations (spec 4.5, rule 1).
    const { config, secret } = splitBrokerSecret(
      ctx.secrets,
      body.retention_configuration,
      env.broker_secret,
    );
    patch.retention_configuration = config;
    patch.broker_secret = secret;
  }
  try {
    const updated = await repo.updateEnv(ctx.db, id, patch);
    if (!updated) throw notFound('Environment not found');
    return toEnvRead(updated);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

/**
 * The environment and its teams go at once, with a recorded deletion of
 * everything those teams own in one transaction (docs/api.md "Deletions").
 */
export async function deleteEnv(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  const env = await requireEnv(ctx.db, p, id, 'admin');
  const deletion = await ctx.db.transaction().execute(async (trx) => {
    const recorded = await recordEnvDeletion(trx, env, p.user.id);
    if (!(await repo.deleteEnv(trx, id))) throw notFound('Environment not found');
    return recorded;
  });
  startDeletions(ctx, [deletion]);
}
