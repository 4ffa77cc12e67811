import { describe, expect, it } from '@jest/globals';
import { CAPTURE_RELEASED_ANNOTATION, type ConnectorResource } from '@sluice/shared/catalog';
import { connector } from '../../../test/plan-fixtures.js';
import { captureReleaseStep } from './capture-release.js';

const deleting = (
  type: ConnectorResource['spec']['connectorType'],
  annotations: Record<string, string> = {},
): ConnectorResource =>
  connector(
    { connectorType: type, configuration: {} },
    {
      name: '0b6f1c2e-1111-4aaa-8bbb-000000000001',
      namespace: 'sluice',
      deletionTimestamp: '2026-11-23T10:00:00Z',
      annotations,
    },
  );

describe('the deletion of a PostgreSQL source waits for the gateway to drop its slot', () => {
  const at = (s: number) => new Date(Date.parse('2026-11-23T10:00:00Z') + s * 1000).toISOString();

  it('waits, bounded, while no outcome is recorded', () => {
    expect(captureReleaseStep(deleting('POSTGRES_SOURCE'), at(1), 120_000)).toEqual({ wait: 5000 });
    expect(captureReleaseStep(deleting('POSTGRES_SOURCE'), at(118), 120_000)).toEqual({ wait: 2000 });
  });

  it('goes on once the slot was dropped, quietly', () => {
    const c = deleting('POSTGRES_SOURCE', { [CAPTURE_RELEASED_ANNOTATION]: 'dropped' });
    expect(captureReleaseStep(c, at(1), 120_000)).toEqual({});
  });

  it('goes on with a warning naming the slot when the drop failed or nobody answered in time', () => {
    const failed = deleting('POSTGRES_SOURCE', { [CAPTURE_RELEASED_ANNOTATION]: 'Connection refused' });
    const step = captureReleaseStep(failed, at(1), 120_000) as { warning: string };
    expect(step.warning).toMatch(
      /^The replication slot sluice_0b6f1c2e_1111_4aaa_8bbb_000000000001_[0-9a-f]{8} was not dropped \(Connection refused\); drop it on the source: SELECT pg_drop_replication_slot\('sluice_/,
    );
    const late = captureReleaseStep(deleting('POSTGRES_SOURCE'), at(120), 120_000) as { warning: string };
    expect(late.warning).toMatch(/^No gateway dropped the replication slot sluice_\S+ within 120 s; drop it/);
  });

  it('does not wait for other types, or when the operator is told not to', () => {
    expect(captureReleaseStep(deleting('KAFKA_SOURCE'), at(1), 120_000)).toEqual({});
    expect(captureReleaseStep(deleting('POSTGRES_SOURCE'), at(1), undefined)).toEqual({});
  });
});

describe('the deletion of a MySQL or MariaDB source waits for the gateway to delete its position topic', () => {
  const at = (s: number) => new Date(Date.parse('2026-11-23T10:00:00Z') + s * 1000).toISOString();
  const topic = 'sluice-position.0b6f1c2e-1111-4aaa-8bbb-000000000001';

  it('waits while no outcome is recorded, then goes on quietly once deleted', () => {
    expect(captureReleaseStep(deleting('MARIADB_SOURCE'), at(1), 120_000)).toEqual({ wait: 5000 });
    expect(captureReleaseStep(deleting('MYSQL_SOURCE'), at(1), 120_000)).toEqual({ wait: 5000 });
    const c = deleting('MARIADB_SOURCE', { [CAPTURE_RELEASED_ANNOTATION]: 'dropped' });
    expect(captureReleaseStep(c, at(1), 120_000)).toEqual({});
  });

  it('goes on with a warning naming the topic when the delete failed or nobody answered in time', () => {
    const failed = deleting('MYSQL_SOURCE', {
      [CAPTURE_RELEASED_ANNOTATION]: 'SLUICE_STREAM_BROKERS is not set',
    });
    expect(captureReleaseStep(failed, at(1), 120_000)).toEqual({
      warning:
        `The position topic ${topic} was not deleted (SLUICE_STREAM_BROKERS is not set); ` +
        `delete it on the platform broker: kafka-topics.sh --delete --topic ${topic}`,
      reason: 'PositionTopicLeft',
    });
    expect(captureReleaseStep(deleting('MARIADB_SOURCE'), at(120), 120_000)).toEqual({
      warning: `No gateway deleted the position topic ${topic} within 120 s; delete it on the platform broker: kafka-topics.sh --delete --topic ${topic}`,
      reason: 'PositionTopicLeft',
    });
  });
});
