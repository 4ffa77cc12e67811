import { DatabricksApiError, type DatabricksClient } from './client.js';
import { OutboundRequestError } from '../net/outbound-http.js';

// The connection test of spec 2.12: three read-only metadata calls, in this
// order, and nothing else — (1) the SQL warehouse by id, (2) the catalog,
// (3) the schema. It runs no SQL and creates nothing. The first failure ends
// it; its meaning is the spec's: (1) wrong hostname, token or HTTP path,
// (2) the catalog does not exist or cannot be used, (3) same for the schema.
// Without a catalog (or schema) setting there is nothing to read for that
// step, and it is skipped.

export type ConnectionStep = 'warehouse' | 'catalog' | 'schema';

export interface ConnectionSettings {
  warehouseId: string;
  catalog?: string;
  schema?: string;
}

export type ConnectionVerdict =
  | { ok: true; warehouse: { name: string; state: string | null } }
  | {
      ok: false;
      step: ConnectionStep;
      /** What the spec says the failure means, then the engine's own words. */
      message: string;
      /** The engine's answer: HTTP status and error code (absent when it could not be reached). */
      status?: number;
      errorCode?: string;
    };

/** The engine's words for a failed call (or why it could not be reached). */
function engineMessage(err: unknown): { text: string; status?: number; errorCode?: string } {
  if (err instanceof DatabricksApiError) {
    return {
      text: `${err.status} ${err.errorCode}: ${err.message}`,
      status: err.status,
      errorCode: err.errorCode,
    };
  }
  if (err instanceof OutboundRequestError) return { text: err.message };
  throw err;
}

export async function testConnection(
  client: DatabricksClient,
  settings: ConnectionSettings,
): Promise<ConnectionVerdict> {
  const fail = (step: ConnectionStep, meaning: string, err: unknown): ConnectionVerdict => {
    const e = engineMessage(err);
    return { ok: false, step, message: `${meaning} (${e.text})`, status: e.status, errorCode: e.errorCode };
  };
  let warehouse;
  try {
    warehouse = await client.getWarehouse(settings.warehouseId);
  } catch (err) {
    return fail(
      'warehouse',
      `Could not read SQL warehouse ${settings.warehouseId}: check the server hostname, the access token and the HTTP path`,
      err,
    );
  }
  if (settings.catalog !== undefined) {
    try {
      await client.getCatalog(settings.catalog);
    } catch (err) {
      return fail('catalog', `Catalog "${settings.catalog}" does not exist or cannot be used`, err);
    }
    if (settings.schema !== undefined) {
      try {
        await client.getSchema(settings.catalog, settings.schema);
      } catch (err) {
        return fail(
          'schema',
          `Schema "${settings.catalog}.${settings.schema}" does not exist or cannot be used`,
          err,
        );
      }
    }
  }
  return {
    ok: true,
    warehouse: {
      name: typeof warehouse.name === 'string' ? warehouse.name : settings.warehouseId,
      state: typeof warehouse.state === 'string' ? warehouse.state : null,
    },
  };
}
