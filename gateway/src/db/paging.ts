import { sql, type SelectQueryBuilder } from 'kysely';

/** Select this with a page's rows: the size of the whole result, in the same query. */
export const fullCount = sql<string>`count(*) over()`.as('full_count');

/**
 * One query per page: the rows carry the total (`fullCount`). Only a page past
 * the end has no row to carry it, and then a count query answers.
 */
export async function fetchPage<R extends { full_count: string | number }>(
  rows: () => Promise<R[]>,
  count: () => Promise<number | string>,
  offset: number,
): Promise<{ rows: Omit<R, 'full_count'>[]; total: number }> {
  const page = await rows();
  const first = page[0];
  if (first) return { rows: page, total: Number(first.full_count) };
  return { rows: [], total: offset === 0 ? 0 : Number(await count()) };
}

/** `%text%` for ILIKE, with the pattern characters of `text` taken literally. */
export const containsPattern = (text: string): string => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The count fallback of `fetchPage`: the size of the whole result of a filtered query. */
export function countAllOf<DB, TB extends keyof DB, O>(
  q: SelectQueryBuilder<DB, TB, O>,
): () => Promise<string> {
  return () =>
    q
      .select(sql<string>`count(*)`.as('n'))
      .executeTakeFirstOrThrow()
      // Kysely cannot resolve the selection over a generic database type.
      .then((r) => (r as { n: string }).n);
}
