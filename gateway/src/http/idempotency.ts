import { createHash } from 'node:crypto';
import { canonicalJson } from '@sluice/shared/util';
import type { Db } from '../db/database.js';
import { conflict, invalid } from './errors.js';
import type { Reply } from './route.js';

const TTL_MS = 24 * 3600 * 1000;
/** A pending record older than this belongs to a request that died mid-way. */
const ABANDONED_MS = 60 * 1000;

// The same body with its keys in another order is the same request (canonicalJson).
function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body)}`)
    .digest('hex');
}

/**
 * Spec 4.10, following the IETF Idempotency-Key draft: the first request with
 * a key claims it (a pending row), later ones replay its stored response. Keys
 * are per user and expire after 24 hours. Only successes are stored, so a
 * request that failed can be retried with the same key.
 */
export async function withIdempotency(
  db: Db,
  userId: string,
  key: string,
  method: string,
  path: string,
  body: unknown,
  run: () => Promise<Reply>,
): Promise<Reply> {
  if (key.length < 1 || key.length > 255) {
    throw invalid(
      ['header', 'Idempotency-Key'],
      'Idempotency-Key must be 1 to 255 characters',
      'string_too_long',
    );
  }
  const hash = requestHash(method, path, body);
  const claim = () =>
    db
      .insertInto('idempotency_keys')
      .values({ user_id: userId, key, request_hash: hash, status: null, body: null })
      .onConflict((oc) => oc.columns(['user_id', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();

  if (!(await claim())) {
    const existing = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .executeTakeFirst();
    const age = existing ? Date.now() - new Date(existing.created_at).getTime() : Infinity;
    const stale = !existing || age > TTL_MS || (existing.status === null && age > ABANDONED_MS);
    if (!stale) {
      if (existing.request_hash !== hash) {
        throw invalid(
          ['header', 'Idempotency-Key'],
          'This Idempotency-Key was already used with a different request',
          'idempotency_key_reused',
        );
      }
      if (existing.status === null)
        throw conflict('A request with this Idempotency-Key is still in progress');
      return { status: existing.status, body: existing.body, headers: { 'Idempotent-Replayed': 'true' } };
    }
    await db.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).execute();
    if (!(await claim())) throw conflict('A request with this Idempotency-Key is still in progress');
  }

  let reply: Reply;
  try {
    reply = await run();
  } catch (err) {
    await db.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).execute();
    throw err;
  }
  if (reply.status >= 200 && reply.status < 300) {
    await db
      .updateTable('idempotency_keys')
      .set({ status: reply.status, body: JSON.stringify(reply.body ?? null) })
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .execute();
  } else {
    await db.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).execute();
  }
  return reply;
}
