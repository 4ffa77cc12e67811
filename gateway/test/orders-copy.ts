import type { ScratchDatabase } from '@sluice/testing/postgres';

/** A row of `public.orders_copy`, the target table of the `orders` pipeline tests. */
export interface OrderCopy {
  id: number;
  item: string;
  qty: number;
}

/** The rows of `public.orders_copy` in `target` by id; none while the target worker has not created it. */
export async function ordersCopy(target: ScratchDatabase): Promise<OrderCopy[]> {
  const { rows } = await target.client
    .query<OrderCopy>('select id::int as id, item, qty::int as qty from public.orders_copy order by id')
    .catch(() => ({ rows: [] as OrderCopy[] }));
  return rows;
}
