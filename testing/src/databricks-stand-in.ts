import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { localCertificate } from './local-certificate.js';

/**
 * A local stand-in of the Databricks workspace REST endpoints a warehouse
 * uses, over TLS with a certificate made at start (clients trust it through
 * their extra-CA setting, as a private CA would be trusted; verification is
 * never turned off). Faithful to the real request and response shapes and
 * error bodies (`{"error_code": …, "message": …}`):
 *
 * - `GET /api/2.0/sql/warehouses/{id}` — 404 RESOURCE_DOES_NOT_EXIST when missing;
 * - `GET /api/2.1/unity-catalog/catalogs/{name}` — 404 CATALOG_DOES_NOT_EXIST,
 *   403 PERMISSION_DENIED for a catalog the token may not use;
 * - `GET /api/2.1/unity-catalog/schemas/{catalog}.{schema}` — 404 SCHEMA_DOES_NOT_EXIST;
 * - `POST /api/2.0/sql/statements`, `GET /api/2.0/sql/statements/{id}`,
 *   `POST /api/2.0/sql/statements/{id}/cancel` — `wait_timeout` honoured,
 *   INLINE JSON_ARRAY results, `row_limit` with `truncated`.
 *
 * A wrong token gets 403 `{"error_code": 403, "message": "Invalid access
 * token."}` (401 with `tokenFailureStatus: 401`); none at all gets 401.
 * Statements: `SELECT * FROM range(N)` gives N rows, `SELECT 1` one; a
 * reference to `missing_table` FAILS with TABLE_OR_VIEW_NOT_FOUND; a comment
 * `/* duration_ms=N *\/` makes it run N ms (slow statements). Every request
 * is logged (`requests`), without its token.
 */

export interface LoggedRequest {
  method: string;
  path: string;
  body?: unknown;
  auth: 'valid' | 'invalid' | 'missing';
}

export interface StandInOptions {
  token: string;
  tokenFailureStatus?: 401 | 403;
  /** SQL warehouses by id. */
  warehouses?: Record<string, { name: string; state?: string }>;
  /** Catalogs with their schemas; `usable: false` answers PERMISSION_DENIED. */
  catalogs?: Record<string, { schemas: string[]; usable?: boolean }>;
}

interface Statement {
  id: string;
  sql: string;
  startedAt: number;
  durationMs: number;
  rowLimit: number | undefined;
  canceled: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class DatabricksStandIn {
  readonly requests: LoggedRequest[] = [];
  private readonly statements = new Map<string, Statement>();
  private constructor(
    private readonly server: Server,
    readonly options: Required<StandInOptions>,
    /** `127.0.0.1:<port>`: the server hostname a warehouse is configured with. */
    readonly host: string,
    /** The PEM certificate clients trust. */
    readonly ca: string,
  ) {}

  static async start(options: StandInOptions): Promise<DatabricksStandIn> {
    const { key, cert } = await localCertificate('databricks-stand-in');
    const opts: Required<StandInOptions> = {
      tokenFailureStatus: 403,
      warehouses: { abc123def4567890: { name: 'Starter Warehouse', state: 'RUNNING' } },
      catalogs: { main: { schemas: ['default', 'sales'] } },
      ...options,
    };
    const ref: { current?: DatabricksStandIn } = {};
    const server = createServer({ key, cert }, (req, res) => {
      void ref.current?.handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    ref.current = new DatabricksStandIn(server, opts, `127.0.0.1:${port}`, cert);
    return ref.current;
  }

  /** The requests of the log as `METHOD path` lines. */
  calls(): string[] {
    return this.requests.map((r) => `${r.method} ${r.path}`);
  }

  clearLog(): void {
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const path = (req.url ?? '/').split('?')[0] as string;
    const header = req.headers.authorization;
    const auth: LoggedRequest['auth'] =
      header === undefined ? 'missing' : header === `Bearer ${this.options.token}` ? 'valid' : 'invalid';
    this.requests.push({ method: req.method ?? 'GET', path, ...(body === undefined ? {} : { body }), auth });

    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
      res.end(JSON.stringify(payload));
    };
    const error = (status: number, code: string | number, message: string) =>
      send(status, { error_code: code, message });

    if (auth === 'missing') {
      return error(401, 401, 'Credential was not sent or was of an unsupported type for this API.');
    }
    if (auth === 'invalid') {
      const status = this.options.tokenFailureStatus;
      return send(
        status,
        { error_code: status, message: 'Invalid access token.' },
        { 'X-Databricks-Reason-Phrase': 'Invalid access token.' },
      );
    }
    const route = `${req.method} ${path}`;
    let m: RegExpExecArray | null;
    if ((m = /^GET \/api\/2\.0\/sql\/warehouses\/([^/]+)$/.exec(route))) {
      const id = decodeURIComponent(m[1] as string);
      const w = this.options.warehouses[id];
      if (!w) return error(404, 'RESOURCE_DOES_NOT_EXIST', `Unable to find warehouse ${id}.`);
      const [hostname, port] = this.host.split(':');
      return send(200, {
        id,
        name: w.name,
        cluster_size: 'Small',
        min_num_clusters: 1,
        max_num_clusters: 1,
        auto_stop_mins: 10,
        creator_name: 'someone@example.com',
        enable_photon: true,
        enable_serverless_compute: false,
        warehouse_type: 'PRO',
        spot_instance_policy: 'COST_OPTIMIZED',
        state: w.state ?? 'RUNNING',
        num_clusters: 1,
        num_active_sessions: 0,
        jdbc_url: `jdbc:databricks://${hostname}:${port}/default;transportMode=http;ssl=1;AuthMech=3;httpPath=/sql/1.0/warehouses/${id};`,
        odbc_params: { hostname, path: `/sql/1.0/warehouses/${id}`, protocol: 'https', port: Number(port) },
        health: { status: 'HEALTHY' },
      });
    }
    if ((m = /^GET \/api\/2\.1\/unity-catalog\/catalogs\/([^/]+)$/.exec(route))) {
      const name = decodeURIComponent(m[1] as string);
      const c = this.options.catalogs[name];
      if (!c) return error(404, 'CATALOG_DOES_NOT_EXIST', `Catalog '${name}' does not exist.`);
      if (c.usable === false) {
        return error(403, 'PERMISSION_DENIED', `User does not have USE CATALOG on Catalog '${name}'.`);
      }
      return send(200, {
        name,
        owner: 'account users',
        comment: '',
        metastore_id: '11111111-2222-3333-4444-555555555555',
        created_at: 1735689600000,
        created_by: 'someone@example.com',
        updated_at: 1735689600000,
        updated_by: 'someone@example.com',
        catalog_type: 'MANAGED_CATALOG',
        isolation_mode: 'OPEN',
        securable_type: 'CATALOG',
        securable_kind: 'CATALOG_STANDARD',
        browse_only: false,
        full_name: name,
      });
    }
    if ((m = /^GET \/api\/2\.1\/unity-catalog\/schemas\/([^/]+)$/.exec(route))) {
      const full = decodeURIComponent(m[1] as string);
      const [catalog = '', schema = ''] = full.split('.');
      const c = this.options.catalogs[catalog];
      if (!c) return error(404, 'CATALOG_DOES_NOT_EXIST', `Catalog '${catalog}' does not exist.`);
      if (!c.schemas.includes(schema)) {
        return error(404, 'SCHEMA_DOES_NOT_EXIST', `Schema '${full}' does not exist.`);
      }
      return send(200, {
        name: schema,
        catalog_name: catalog,
        full_name: full,
        owner: 'account users',
        comment: '',
        metastore_id: '11111111-2222-3333-4444-555555555555',
        created_at: 1735689600000,
        created_by: 'someone@example.com',
        updated_at: 1735689600000,
        updated_by: 'someone@example.com',
        catalog_type: 'MANAGED_CATALOG',
        securable_type: 'SCHEMA',
        browse_only: false,
      });
    }
    if (route === 'POST /api/2.0/sql/statements') return this.submit(body, send, error);
    if ((m = /^GET \/api\/2\.0\/sql\/statements\/([^/]+)$/.exec(route))) {
      const s = this.statements.get(decodeURIComponent(m[1] as string));
      if (!s) return error(404, 'RESOURCE_DOES_NOT_EXIST', 'Statement not found.');
      return send(200, this.response(s));
    }
    if ((m = /^POST \/api\/2\.0\/sql\/statements\/([^/]+)\/cancel$/.exec(route))) {
      const s = this.statements.get(decodeURIComponent(m[1] as string));
      if (!s) return error(404, 'RESOURCE_DOES_NOT_EXIST', 'Statement not found.');
      if (this.state(s) === 'RUNNING' || this.state(s) === 'PENDING') s.canceled = true;
      return send(200, {});
    }
    return error(404, 'ENDPOINT_NOT_FOUND', `No API found for '${route}'`);
  }

  private async submit(
    body: unknown,
    send: (status: number, payload: unknown) => void,
    error: (status: number, code: string, message: string) => void,
  ): Promise<void> {
    const b = (body ?? {}) as Record<string, unknown>;
    if (typeof b.statement !== 'string' || !b.statement) {
      return error(400, 'INVALID_PARAMETER_VALUE', 'statement is required');
    }
    if (typeof b.warehouse_id !== 'string' || !this.options.warehouses[b.warehouse_id]) {
      return error(404, 'RESOURCE_DOES_NOT_EXIST', `Unable to find warehouse ${String(b.warehouse_id)}.`);
    }
    const wait = String(b.wait_timeout ?? '10s');
    if (!/^(0|[5-9]|[1-4]\d|50)s$/.test(wait)) {
      return error(
        400,
        'INVALID_PARAMETER_VALUE',
        `wait_timeout must be 0s or between 5s and 50s, got '${wait}'`,
      );
    }
    if ((b.disposition ?? 'INLINE') !== 'INLINE' || (b.format ?? 'JSON_ARRAY') !== 'JSON_ARRAY') {
      return error(400, 'INVALID_PARAMETER_VALUE', 'The stand-in serves INLINE JSON_ARRAY results only');
    }
    const duration = /\/\*\s*duration_ms=(\d+)\s*\*\//.exec(b.statement);
    const s: Statement = {
      id: `01f0${randomUUID().slice(4)}`,
      sql: b.statement,
      startedAt: Date.now(),
      durationMs: duration ? Number(duration[1]) : 0,
      rowLimit: typeof b.row_limit === 'number' ? b.row_limit : undefined,
      canceled: false,
    };
    this.statements.set(s.id, s);
    const waitMs = Number(wait.slice(0, -1)) * 1000;
    if (waitMs > 0) {
      await sleep(Math.min(waitMs, s.durationMs));
      if (!this.finished(s) && b.on_wait_timeout === 'CANCEL') s.canceled = true;
    }
    send(200, this.response(s));
  }

  private finished(s: Statement): boolean {
    return Date.now() - s.startedAt >= s.durationMs;
  }

  private state(s: Statement): string {
    if (s.canceled) return 'CANCELED';
    if (!this.finished(s)) return Date.now() - s.startedAt < 50 ? 'PENDING' : 'RUNNING';
    return /missing_table/i.test(s.sql) ? 'FAILED' : 'SUCCEEDED';
  }

  private response(s: Statement): unknown {
    const state = this.state(s);
    if (state === 'FAILED') {
      return {
        statement_id: s.id,
        status: {
          state,
          error: {
            error_code: 'BAD_REQUEST',
            message:
              '[TABLE_OR_VIEW_NOT_FOUND] The table or view `missing_table` cannot be found. Verify the spelling ' +
              'and correctness of the schema and catalog. SQLSTATE: 42P01; line 1 pos 14',
          },
          sql_state: '42P01',
        },
      };
    }
    if (state !== 'SUCCEEDED') return { statement_id: s.id, status: { state } };
    const { columns, rows } = this.result(s.sql);
    const limited = s.rowLimit !== undefined ? rows.slice(0, s.rowLimit) : rows;
    return {
      statement_id: s.id,
      status: { state },
      manifest: {
        format: 'JSON_ARRAY',
        schema: {
          column_count: columns.length,
          columns: columns.map((c, position) => ({
            name: c.name,
            type_text: c.type,
            type_name: c.type,
            position,
          })),
        },
        total_chunk_count: 1,
        chunks: [{ chunk_index: 0, row_offset: 0, row_count: limited.length }],
        total_row_count: limited.length,
        truncated: limited.length < rows.length,
      },
      result: { chunk_index: 0, row_offset: 0, row_count: limited.length, data_array: limited },
    };
  }

  private result(sql: string): { columns: { name: string; type: string }[]; rows: (string | null)[][] } {
    const range = /range\((\d+)\)/i.exec(sql);
    if (range) {
      const n = Number(range[1]);
      return {
        columns: [{ name: 'id', type: 'BIGINT' }],
        rows: Array.from({ length: n }, (_, i) => [String(i)]),
      };
    }
    if (/^\s*(insert|merge|update|delete)\b/i.test(sql)) {
      return {
        columns: [
          { name: 'num_affected_rows', type: 'BIGINT' },
          { name: 'num_inserted_rows', type: 'BIGINT' },
        ],
        rows: [['0', '0']],
      };
    }
    return { columns: [{ name: '1', type: 'INT' }], rows: [['1']] };
  }
}
