import { describe, expect, it } from '@jest/globals';
import { RefIndex } from './ref-index.js';

describe('RefIndex', () => {
  it('finds who references what, and forgets old references when an object changes or goes', () => {
    const index = new RefIndex();
    index.set('ns/p1', ['Connector/ns/a', 'Connector/ns/b']);
    index.set('ns/p2', ['Connector/ns/a']);
    expect([...index.get('Connector/ns/a')].sort()).toEqual(['ns/p1', 'ns/p2']);
    index.set('ns/p1', ['Connector/ns/c']); // p1 now points elsewhere
    expect(index.get('Connector/ns/a')).toEqual(['ns/p2']);
    expect(index.get('Connector/ns/b')).toEqual([]);
    expect(index.get('Connector/ns/c')).toEqual(['ns/p1']);
    index.set('ns/p2', []); // deleted
    expect(index.get('Connector/ns/a')).toEqual([]);
  });
});
