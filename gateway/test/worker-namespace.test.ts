import { afterEach, describe, expect, it } from '@jest/globals';
import { databaseKinds } from './harness.js';
import { startRestartableGateway, type RestartableGateway } from './restartable-gateway.js';

// The embedded store keys secrets by namespace: a data directory started
// again with another SLUICE_WORKER_NAMESPACE takes its managed secrets
// along (as the operator moves them on Kubernetes: docs/security.md,
// "Worker namespace"), and leaves the others where they are.

describe.each(databaseKinds())('a new SLUICE_WORKER_NAMESPACE on the embedded store (%s)', (kind) => {
  let gw: RestartableGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  it('moves the managed secrets at start, and nothing else', async () => {
    gw = await startRestartableGateway(kind, { SLUICE_NAMESPACE: 'sluice' });
    const store = gw.ctx.secretStore;
    const managed = 'sluice-connector-0b7f9a52-6d7e-4b8f-9a0b-1c2d3e4f5a6b';
    await store.put('sluice', managed, { password: 'p1' }, { labels: { 'sluice.dev/managed': 'true' } });
    await store.put('sluice', 'orders-db', { password: 'p2' }, { annotations: {} });
    await store.put('sluice', 'sluice-keys', { k: 'v' }, { labels: { 'sluice.dev/control-plane': 'true' } });

    await gw.restart({ SLUICE_WORKER_NAMESPACE: 'sluice-workers' });
    const after = gw.ctx.secretStore;
    expect((await after.get('sluice-workers', managed))?.data).toEqual({ password: 'p1' });
    expect(await after.get('sluice', managed)).toBeUndefined();
    expect((await after.list('sluice-workers')).map((s) => s.name)).toEqual([managed]);
    expect((await after.list('sluice')).map((s) => s.name).sort()).toEqual(['orders-db', 'sluice-keys']);
    // The API lists the worker namespace: the moved secret for a superuser, not the old namespace's.
    const admin = await gw.superuser();
    const listed = await gw.http.get('/api/k8s-secrets').set(admin.auth);
    expect(listed.status).toBe(200);
    expect((listed.body as { name: string }[]).map((s) => s.name)).toEqual([managed]);
  }, 60_000);
});
