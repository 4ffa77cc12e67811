import { expect } from '@jest/globals';
import { freePort } from '@sluice/shared/net';
import type { TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';

// What the pre-flight suites share: a gateway allowed to reach 127.0.0.1 (its
// default outbound policy denies loopback), a poster for the check paths, a
// closed port, and the scan that no secret reached a response or a log.

/** A closed local port: nothing listens there (a free one, just released). */
export const closedPort = freePort;

/** No response body and no log line of the gateway contains any of `secrets`. */
export function expectNothingLeaked(gw: TestGateway, secrets: string[]): void {
  const { bodies, logs } = gw.recorded();
  for (const secret of secrets.filter(Boolean)) {
    expect(bodies.filter((b) => b.includes(secret))).toEqual([]);
    expect(logs.filter((l) => l.includes(secret))).toEqual([]);
  }
}

/** The leak scan, then the gateway closed either way. */
export async function closeChecked(gw: TestGateway, secrets: string[]): Promise<void> {
  try {
    expectNothingLeaked(gw, secrets);
  } finally {
    await gw.close();
  }
}

/** `POST /api/connector-types/<prefix><path>` as `auth`. */
export const poster =
  (gw: () => TestGateway, owner: () => TeamSetup, prefix = '') =>
  (path: string, body: unknown, auth = owner().owner.auth) =>
    gw()
      .http.post(`/api/connector-types/${prefix}${path}`)
      .set(auth)
      .send(body as object);

export const startPreflightGateway = () =>
  startTestGateway('pglite', { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
