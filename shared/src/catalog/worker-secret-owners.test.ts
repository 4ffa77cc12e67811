import { describe, expect, it } from '@jest/globals';
import type { ClusterObject } from '../ports/cluster.js';
import { workerSecretOwners } from './worker-secret-owners.js';

const TARGET = '00000000-0000-4000-8000-00000000000a';
const SOURCE = '00000000-0000-4000-8000-00000000000b';
const MODEL = '00000000-0000-4000-8000-00000000000c';
const SUB = '00000000-0000-4000-8000-00000000000d';

const objects = new Map<string, ClusterObject>([
  [`Connector/${TARGET}`, { spec: { teamId: 'team-target' } } as unknown as ClusterObject],
  [`Connector/${SOURCE}`, { spec: { teamId: 'team-source' } } as unknown as ClusterObject],
  [`DataModel/${MODEL}`, { spec: { connectorId: SOURCE } } as unknown as ClusterObject],
]);
const lookup = async (kind: string, name: string) => objects.get(`${kind}/${name}`);

describe('workerSecretOwners', () => {
  it("names the teams and managed secrets of a target's connector, its sources and its subscriptions", async () => {
    const config = { connector_id: TARGET, subscriptions: [{ id: SUB, datamodel_id: MODEL }] };
    expect(await workerSecretOwners(config, lookup)).toEqual({
      teamIds: ['team-target', 'team-source'],
      ownSecrets: [`sluice-connector-${TARGET}`, `sluice-subscription-${SUB}`, `sluice-connector-${SOURCE}`],
    });
  });

  it('names nothing for objects that are gone or fields that are not names', async () => {
    const gone = '00000000-0000-4000-8000-0000000000ff';
    expect(
      await workerSecretOwners({ connector_id: gone, subscriptions: [{ datamodel_id: gone }] }, lookup),
    ).toEqual({ teamIds: [], ownSecrets: [] });
    for (const config of [
      undefined,
      null,
      'x',
      { connector_id: 7, subscriptions: 'all' },
      { subscriptions: [null] },
    ]) {
      expect(await workerSecretOwners(config, lookup)).toEqual({ teamIds: [], ownSecrets: [] });
    }
  });
});
