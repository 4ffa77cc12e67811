import { requestJson, type JsonResponse, type OutboundHttpOptions } from '../net/outbound-http.js';

// A small client of the Databricks workspace REST API: the three metadata
// reads of the connection test and the SQL Statement Execution API. Request
// and response shapes are Databricks' own (snake_case); the token goes in the
// Authorization header only and never into an error message.

/** An HTTP error answer of the workspace: `{"error_code": "...", "message": "..."}`. */
export class DatabricksApiError extends Error {
  override readonly name = 'DatabricksApiError';
  constructor(
    readonly status: number,
    /** Databricks sends a string code (`RESOURCE_DOES_NOT_EXIST`), or a number on some auth failures (403). */
    readonly errorCode: string,
    message: string,
  ) {
    super(message);
  }
}

export interface SqlWarehouse {
  id: string;
  name: string;
  state?: string;
  [key: string]: unknown;
}
export interface UnityCatalog {
  name: string;
  [key: string]: unknown;
}
export interface UnitySchema {
  name: string;
  catalog_name: string;
  full_name?: string;
  [key: string]: unknown;
}

export const STATEMENT_STATES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED', 'CLOSED'] as const;
export type StatementState = (typeof STATEMENT_STATES)[number];
export const TERMINAL_STATES: readonly StatementState[] = ['SUCCEEDED', 'FAILED', 'CANCELED', 'CLOSED'];

/** POST /api/2.0/sql/statements (the fields Sluice sends). */
export interface ExecuteStatementRequest {
  statement: string;
  warehouse_id: string;
  catalog?: string;
  schema?: string;
  /** `0s`, or `5s` to `50s`: how long the call blocks before answering with the statement still running. */
  wait_timeout: string;
  on_wait_timeout: 'CONTINUE' | 'CANCEL';
  disposition: 'INLINE';
  format: 'JSON_ARRAY';
  row_limit?: number;
}

export interface StatementColumn {
  name: string;
  type_name?: string;
  type_text?: string;
  position?: number;
}

/** The StatementResponse object. */
export interface StatementResponse {
  statement_id: string;
  status: {
    state: StatementState;
    error?: { error_code?: string; message?: string };
    sql_state?: string;
  };
  manifest?: {
    format?: string;
    schema?: { column_count?: number; columns?: StatementColumn[] };
    total_chunk_count?: number;
    total_row_count?: number;
    truncated?: boolean;
  };
  result?: {
    chunk_index?: number;
    row_offset?: number;
    row_count?: number;
    data_array?: (string | null)[][];
    next_chunk_index?: number;
  };
}

export interface DatabricksTarget {
  /** The server hostname (with a port when one was configured). */
  host: string;
  token: string;
  /** `http` only with the development setting that allows it (`OutboundHttpOptions.allowHttp`). */
  scheme?: 'https' | 'http';
}

export class DatabricksClient {
  constructor(
    private readonly target: DatabricksTarget,
    private readonly http: OutboundHttpOptions,
  ) {}

  /** `GET /api/2.0/sql/warehouses/{id}` */
  getWarehouse(id: string): Promise<SqlWarehouse> {
    return this.call('GET', `/api/2.0/sql/warehouses/${encodeURIComponent(id)}`);
  }

  /** `GET /api/2.1/unity-catalog/catalogs/{name}` */
  getCatalog(name: string): Promise<UnityCatalog> {
    return this.call('GET', `/api/2.1/unity-catalog/catalogs/${encodeURIComponent(name)}`);
  }

  /** `GET /api/2.1/unity-catalog/schemas/{catalog}.{schema}` */
  getSchema(catalog: string, schema: string): Promise<UnitySchema> {
    return this.call('GET', `/api/2.1/unity-catalog/schemas/${encodeURIComponent(`${catalog}.${schema}`)}`);
  }

  /** `POST /api/2.0/sql/statements` */
  executeStatement(body: ExecuteStatementRequest): Promise<StatementResponse> {
    return this.call('POST', '/api/2.0/sql/statements', body);
  }

  /** `GET /api/2.0/sql/statements/{id}` */
  getStatement(id: string): Promise<StatementResponse> {
    return this.call('GET', `/api/2.0/sql/statements/${encodeURIComponent(id)}`);
  }

  /** `POST /api/2.0/sql/statements/{id}/cancel` */
  async cancelStatement(id: string): Promise<void> {
    await this.call('POST', `/api/2.0/sql/statements/${encodeURIComponent(id)}/cancel`);
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const url = new URL(`${this.target.scheme ?? 'https'}://${this.target.host}${path}`);
    const res = await requestJson(
      url,
      { method, headers: { Authorization: `Bearer ${this.target.token}` }, body },
      this.http,
    );
    if (res.status >= 200 && res.status < 300) return (res.json ?? {}) as T;
    throw apiError(res);
  }
}

/** The error body of a failed call; HTML error pages (a proxy, a 401 without body) keep the status line. */
function apiError(res: JsonResponse): DatabricksApiError {
  const body = (res.json ?? {}) as { error_code?: unknown; message?: unknown };
  const reason = res.headers['x-databricks-reason-phrase'];
  const code =
    typeof body.error_code === 'string' || typeof body.error_code === 'number'
      ? String(body.error_code)
      : String(res.status);
  const message =
    typeof body.message === 'string' && body.message
      ? body.message
      : typeof reason === 'string' && reason
        ? reason
        : `HTTP ${res.status}`;
  return new DatabricksApiError(res.status, code, message);
}
