import { describe, expect, it } from '@jest/globals';
import { inferFields } from './datamodels.inference.js';

describe('inferFields (schema of a Kafka topic from its messages)', () => {
  it('names nested fields by mapper path, with types and nullability from every message', () => {
    const fields = inferFields([
      { order: { id: 1, total: 2.5 }, note: 'a', tags: ['x'] },
      { order: { id: 2, total: 3 }, note: null },
      'not json',
      { order: { id: 3, total: 4 }, note: 'c', flag: true },
    ]);
    expect(fields).toEqual([
      { name: 'order|id', type: 'integer', nullable: false },
      { name: 'order|total', type: 'number', nullable: false },
      { name: 'note', type: 'string', nullable: true },
      { name: 'tags', type: 'array', nullable: true },
      { name: 'flag', type: 'boolean', nullable: true },
    ]);
  });

  it('says which types a field mixes, and nothing without JSON objects', () => {
    expect(inferFields([{ v: 1 }, { v: 'one' }])).toEqual([
      { name: 'v', type: 'integer|string', nullable: false },
    ]);
    expect(inferFields(['text', 42, null])).toEqual([]);
  });
});
