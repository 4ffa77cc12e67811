import { expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { eventually, readTopic } from '@sluice/testing/kafka-helpers';
import { kafkaPipelineFixture, startLiveKafkaPipeline } from './kafka-pipeline-setup.js';

// A live pipeline's target scaled through the REST API on one machine (the
// embedded operator, the process runtime, the real worker program and
// broker): `replicas` reaches the workers, `ready_replicas` comes back from
// their readiness through the operator's status and the mirror, nothing is
// restarted, and every message is delivered across the scales.

describeWithKafka('scaling a target connector through the REST API (real workers, real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const run = randomUUID().slice(0, 8);
  const source = `scale-in-${run}`;
  const out = `scale-out-${run}`;
  const s = kafkaPipelineFixture('pglite', 'scale-e2e', brokers, source);

  const get = (path: string) => s.gw.http.get(path).set(s.t.owner.auth);
  const produce = (ids: number[]) =>
    s.producer.send({ messages: ids.map((id) => ({ topic: source, value: JSON.stringify({ id }) })) });
  const outIds = async () =>
    new Set((await readTopic(brokers, s.admin, out)).map((m) => (JSON.parse(m.value) as { id: number }).id));
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  it('PATCH replicas 2 runs two workers (ready_replicas 2) and back to 1, live throughout, no message lost', async () => {
    const { targetId } = await startLiveKafkaPipeline(s, `scale-${run}`, out, [
      { key: 'id', path: 'id', cast: 'int', primary_key: true },
    ]);
    const target = `/api/connectors/${targetId}`;
    expect((await get(target)).body).toMatchObject({ replicas: 1, ready_replicas: 1 });

    await produce(range(1, 100));
    const patched = await s.gw.http.patch(target).set(s.t.owner.auth).send({ replicas: 2 });
    expect(patched.status).toBe(200);
    expect(patched.body.replicas).toBe(2);
    // Sampled all along: a restarted worker would show `building` until it is ready again.
    const seen = new Set<string>();
    const two = await eventually(
      async () => (await get(target)).body,
      (c) => (seen.add(c.status), c.ready_replicas === 2),
      60_000,
      50,
    );
    expect(two).toMatchObject({ status: 'live', replicas: 2 });
    expect([...seen]).toEqual(['live']);
    await produce(range(101, 200));

    await s.gw.http.patch(target).set(s.t.owner.auth).send({ replicas: 1 });
    const one = await eventually(
      async () => (await get(target)).body,
      (c) => (seen.add(c.status), c.ready_replicas === 1),
      60_000,
      50,
    );
    expect(one).toMatchObject({ status: 'live', replicas: 1 });
    expect([...seen]).toEqual(['live']);
    await produce(range(201, 300));
    const delivered = await eventually(outIds, (ids) => ids.size >= 300);
    expect([...delivered].sort((a, b) => a - b)).toEqual(range(1, 300));
  }, 180_000);
});
