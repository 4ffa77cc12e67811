import { describe, expect, it } from '@jest/globals';
import { watchNamespaces } from './watch-namespaces.js';

describe('watchNamespaces', () => {
  it('reads the chart setting: all, a list with the home namespace first, or the home namespace', () => {
    expect(watchNamespaces('*', 'sluice')).toBeUndefined();
    expect(watchNamespaces('sluice,team-a, team-b,team-a', 'sluice')).toEqual(['sluice', 'team-a', 'team-b']);
    expect(watchNamespaces('team-a', 'sluice')).toEqual(['sluice', 'team-a']);
    expect(watchNamespaces(undefined, 'sluice')).toEqual(['sluice']);
    expect(watchNamespaces('', 'sluice')).toEqual(['sluice']);
  });
});
