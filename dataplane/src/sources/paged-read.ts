// The chunk loop of the initial snapshots (postgres-cdc/snapshot.ts: a
// cursor's FETCH; mysql-cdc/snapshot.ts: primary-key pages): a table read a
// page at a time, each row handed on before the next page is asked for, so
// the pace is the consumer's and no more than a page is held.

/**
 * Reads pages of at most `size` rows with `next` (which knows where the
 * previous page ended) until one comes back short; each row goes to `each`
 * in order. Resolves with the number of rows read.
 */
export async function readPaged<Row>(
  size: number,
  next: () => Promise<Row[]>,
  each: (row: Row) => Promise<unknown>,
  signal: AbortSignal,
): Promise<number> {
  let rows = 0;
  for (;;) {
    signal.throwIfAborted();
    const page = await next();
    for (const row of page) await each(row);
    rows += page.length;
    if (page.length < size) return rows;
  }
}
