import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import { DatabricksStandIn, type StandInOptions } from '@sluice/testing/databricks-stand-in';
import { SECRETS } from './catalog-fixtures.js';
import type { TestGateway, TestUser } from './harness.js';

export { DatabricksStandIn };
export const WAREHOUSE_ID = 'abc123def4567890';
export const HTTP_PATH = `/sql/1.0/warehouses/${WAREHOUSE_ID}`;

/** The Databricks stand-in (token `SECRETS.warehouseToken`), with catalog `main` (schemas default, sales). */
export function startStandIn(options: Partial<StandInOptions> = {}): Promise<DatabricksStandIn> {
  return DatabricksStandIn.start({ token: SECRETS.warehouseToken, ...options });
}

/**
 * Gateway settings that let it reach the stand-in: its CA trusted (a file,
 * as an operator would configure a private CA) and 127.0.0.1 allowed by the
 * outbound policy's override; everything else of the policy stays on.
 */
export function warehouseEnv(standIn: DatabricksStandIn): Record<string, string> {
  // One file per test process: the stand-ins of a process share their certificate.
  const caFile = join(tmpdir(), `sluice-standin-ca-${process.pid}.pem`);
  writeFileSync(caFile, standIn.ca);
  return { SLUICE_WAREHOUSE_CA_FILE: caFile, SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32' };
}

export async function createWarehouse(
  gw: Pick<TestGateway, 'http'>,
  u: TestUser,
  teamId: string,
  standIn: DatabricksStandIn,
  extra: Record<string, unknown> = {},
) {
  const res = await gw.http
    .post('/api/warehouses/')
    .set(u.auth)
    .send({
      name: `wh-${randomUUID().slice(0, 8)}`,
      team_id: teamId,
      server_hostname: standIn.host,
      http_path: HTTP_PATH,
      access_token: SECRETS.warehouseToken,
      catalog: 'main',
      schema: 'sales',
      ...extra,
    });
  if (res.status !== 201)
    throw new Error(`warehouse create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; name: string; status: string };
}
