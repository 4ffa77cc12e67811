import { describe, expect, it } from '@jest/globals';
import { truncatedTable } from './truncate-statement.js';

describe('truncatedTable', () => {
  it('names the table of qualified and unqualified statements, the default database filling in', () => {
    expect(truncatedTable('TRUNCATE TABLE shop.orders', 'other')).toBe('shop.orders');
    expect(truncatedTable('truncate orders', 'shop')).toBe('shop.orders');
    expect(truncatedTable('Truncate Table `shop`.`orders`', '')).toBe('shop.orders');
    expect(truncatedTable('TRUNCATE `shop` . `order``s`', 'x')).toBe('shop.order`s');
    expect(truncatedTable('TRUNCATE TABLE "shop"."orders"', 'x')).toBe('shop.orders');
    expect(truncatedTable('TRUNCATE TABLE `my table`', 'shop')).toBe('shop.my table');
    expect(truncatedTable('TRUNCATE TABLE `db.with.dots`.t', 'shop')).toBe('db.with.dots.t');
    expect(truncatedTable('TRUNCATE TABLE t$1', 'shop')).toBe('shop.t$1');
    expect(truncatedTable('TRUNCATE TABLE tàble', 'shop')).toBe('shop.tàble');
  });

  it('reads through comments, line breaks and the trailing options', () => {
    expect(truncatedTable('/* app: cleanup */ TRUNCATE /* now */ TABLE\n  shop.orders;', '')).toBe(
      'shop.orders',
    );
    expect(truncatedTable('-- why\nTRUNCATE TABLE orders', 'shop')).toBe('shop.orders');
    expect(truncatedTable('# why\ntruncate table orders WAIT 5', 'shop')).toBe('shop.orders');
    expect(truncatedTable('TRUNCATE TABLE orders NOWAIT', 'shop')).toBe('shop.orders');
    expect(truncatedTable('TRUNCATE TABLE orders /* done */', 'shop')).toBe('shop.orders');
  });

  it('is null for other statements and for a name without a database', () => {
    expect(truncatedTable('TRUNCATE TABLE orders', '')).toBeNull();
    expect(truncatedTable('DROP TABLE orders', 'shop')).toBeNull();
    expect(truncatedTable('TRUNCATED', 'shop')).toBeNull();
    expect(truncatedTable('TRUNCATETABLE orders', 'shop')).toBeNull();
    expect(truncatedTable("INSERT INTO t VALUES ('TRUNCATE TABLE orders')", 'shop')).toBeNull();
    expect(truncatedTable('ALTER TABLE orders TRUNCATE PARTITION p0', 'shop')).toBeNull();
    // A table named `table`: TRUNCATE TABLE `table`; the bare word after TRUNCATE alone is the keyword.
    expect(truncatedTable('TRUNCATE TABLE `table`', 'shop')).toBe('shop.table');
  });
});
