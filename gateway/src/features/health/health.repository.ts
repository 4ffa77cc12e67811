import { sql } from 'kysely';
import type { Db } from '../../db/database.js';

/** Resolves when the service database answers a query; rejects with the driver's error. */
export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
