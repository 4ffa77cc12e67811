// The connection settings of a warehouse (spec 2.12), as a Databricks SQL
// warehouse has them: server hostname, HTTP path, catalog, schema. Pure
// functions: the gateway validates request bodies with them, the client
// builds its URLs from their results.

/** Spec 2.12 and 8: letters, digits, underscores and hyphens. */
export const UNITY_NAME_PATTERN = '^[A-Za-z0-9_-]+$';
const UNITY_NAME = new RegExp(UNITY_NAME_PATTERN);

/** The prefix of an all-purpose cluster's HTTP path, refused (spec 2.12). */
export const CLUSTER_PATH_PREFIX = '/sql/protocolv1/';

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOST = new RegExp(`^(?:${LABEL})(?:\\.${LABEL})*(?::(\\d{1,5}))?$`);
const IPV6_HOST = /^\[[0-9a-f:.]+\](?::(\d{1,5}))?$/;
const WAREHOUSE_PATH = /^\/sql\/1\.0\/(?:warehouses|endpoints)\/([A-Za-z0-9]+)\/?$/;

export type SettingResult<T> = { ok: true; value: T } | { ok: false; msg: string };

/**
 * The server hostname as stored: without scheme, path, query or credentials,
 * lower case. A pasted URL (`https://adb-1.2.azuredatabricks.net/?o=1#job`) is
 * reduced to its host. A port is kept when one is given (Databricks never
 * needs one; a private endpoint or a local stand-in may).
 */
export function normalizeHostname(raw: string): SettingResult<string> {
  let host = raw.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(host)) {
    try {
      host = new URL(host).host;
    } catch {
      return { ok: false, msg: 'Not a hostname or URL' };
    }
  } else {
    host = host.split(/[/?#]/, 1)[0] ?? '';
  }
  host = host.toLowerCase().replace(/\.$/, '');
  const match = HOST.exec(host) ?? IPV6_HOST.exec(host);
  if (!host || host.length > 255 || !match) {
    return {
      ok: false,
      msg: 'Must be the server hostname of the workspace, e.g. adb-1234567890123456.7.azuredatabricks.net',
    };
  }
  const port = match[1];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) {
    return { ok: false, msg: 'The port must be between 1 and 65535' };
  }
  return { ok: true, value: host };
}

/** The SQL warehouse id of an HTTP path `/sql/1.0/warehouses/<id>` (or the older `/sql/1.0/endpoints/<id>`). */
export function warehouseIdOf(httpPath: string): SettingResult<string> {
  const path = httpPath.trim();
  if (path.startsWith(CLUSTER_PATH_PREFIX)) {
    return {
      ok: false,
      msg:
        'This is the HTTP path of a cluster (/sql/protocolv1/…); a warehouse needs the HTTP path of a SQL ' +
        'warehouse, /sql/1.0/warehouses/<warehouse id> (the SQL warehouse’s Connection details tab)',
    };
  }
  const match = WAREHOUSE_PATH.exec(path);
  if (!match?.[1]) {
    return {
      ok: false,
      msg: 'Must be the HTTP path of a SQL warehouse: /sql/1.0/warehouses/<warehouse id>',
    };
  }
  return { ok: true, value: match[1] };
}

/** The HTTP path as stored (trimmed, no trailing slash); call after `warehouseIdOf` accepted it. */
export const normalizeHttpPath = (httpPath: string): string => httpPath.trim().replace(/\/$/, '');

export function checkUnityName(value: string, what: 'catalog' | 'schema'): SettingResult<string> {
  if (value.length > 255 || !UNITY_NAME.test(value)) {
    return { ok: false, msg: `The ${what} name may hold only letters, digits, underscores and hyphens` };
  }
  return { ok: true, value };
}
