import { Reader } from './binlog-events.js';
import { decodeMysqlJson, MysqlJsonError } from './mysql-json.js';

// MySQL's partial JSON updates (binlog_row_value_options=PARTIAL_JSON): the
// after image of a JSON column changed by JSON_SET/JSON_REPLACE/JSON_REMOVE
// is a list of operations on the before image's value instead of the value
// (sql/json_diff.cc, Json_diff_vector::write_binary): per operation a byte
// (0 replace, 1 insert, 2 remove), the path's length (length-encoded) and
// the path (`$.a."b c"[2]`), then, but for a remove, the new value's length
// and the value in binary JSON. Applied here to the before image, as a
// replica applies them.

const OP = { REPLACE: 0, INSERT: 1, REMOVE: 2 } as const;

type Leg = string | number;

/** The legs of a path as the server writes them: `$`, then `.member`, `."quoted member"` or `[index]`. */
export function parseJsonPath(path: string): Leg[] {
  if (!path.startsWith('$')) throw new MysqlJsonError(`JSON path "${path}" does not start with $`);
  const legs: Leg[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (c === '[') {
      const end = path.indexOf(']', i);
      const index = path.slice(i + 1, end).trim();
      if (end < 0 || !/^\d+$/.test(index))
        throw new MysqlJsonError(`JSON path "${path}" has a bad array index`);
      legs.push(Number(index));
      i = end + 1;
    } else if (c === '.' && path[i + 1] === '"') {
      // A quoted member: a JSON string, escapes and all.
      let end = i + 2;
      while (end < path.length && path[end] !== '"') end += path[end] === '\\' ? 2 : 1;
      if (end >= path.length) throw new MysqlJsonError(`JSON path "${path}" has an unclosed member name`);
      legs.push(JSON.parse(path.slice(i + 1, end + 1)) as string);
      i = end + 1;
    } else if (c === '.') {
      const m = /^[^.[\s]+/.exec(path.slice(i + 1));
      if (!m) throw new MysqlJsonError(`JSON path "${path}" has an empty member name`);
      legs.push(m[0]);
      i += 1 + m[0].length;
    } else {
      throw new MysqlJsonError(`JSON path "${path}" has "${c}" where a leg should start`);
    }
  }
  return legs;
}

type Container = Record<string, unknown> | unknown[];

const isContainer = (v: unknown): v is Container => typeof v === 'object' && v !== null;

function applyOne(doc: unknown, op: number, path: string, value: unknown): unknown {
  const legs = parseJsonPath(path);
  const fail = (why: string): never => {
    throw new MysqlJsonError(
      `the partial update's operation at ${path} does not fit the value before it (${why})`,
    );
  };
  if (legs.length === 0) {
    if (op === OP.REPLACE) return value;
    return fail('the whole document cannot be inserted or removed');
  }
  let parent: unknown = doc;
  for (const leg of legs.slice(0, -1)) {
    if (!isContainer(parent)) fail('a leg of the path is not an object or array');
    parent = (parent as Record<string | number, unknown>)[leg];
  }
  const last = legs[legs.length - 1]!;
  if (Array.isArray(parent) && typeof last === 'number') {
    if (op === OP.REPLACE) {
      if (last >= parent.length) fail('no such array cell');
      parent[last] = value;
    } else if (op === OP.INSERT) parent.splice(Math.min(last, parent.length), 0, value);
    else if (last < parent.length) parent.splice(last, 1);
    else fail('no such array cell');
  } else if (isContainer(parent) && !Array.isArray(parent) && typeof last === 'string') {
    const has = Object.prototype.hasOwnProperty.call(parent, last);
    if (op === OP.REPLACE && !has) fail('no such member');
    if (op === OP.REMOVE) {
      if (!has) fail('no such member');
      delete parent[last];
    } else
      Object.defineProperty(parent, last, { value, enumerable: true, writable: true, configurable: true });
  } else {
    fail('the path does not lead into an object or array');
  }
  return doc;
}

/** The value after the diff `bytes` is applied to `before` (which is not changed). */
export function applyJsonDiff(before: unknown, bytes: Buffer): unknown {
  let doc = structuredClone(before);
  const r = new Reader(bytes);
  try {
    while (r.pos < bytes.length) {
      const op = r.u8();
      if (op !== OP.REPLACE && op !== OP.INSERT && op !== OP.REMOVE) {
        throw new MysqlJsonError(`partial JSON update operation ${op} is not replace, insert or remove`);
      }
      const path = r.bytes(r.lenenc()).toString('utf8');
      const value = op === OP.REMOVE ? undefined : decodeMysqlJson(r.bytes(r.lenenc()));
      doc = applyOne(doc, op, path, value);
    }
  } catch (error) {
    if (error instanceof RangeError) throw new MysqlJsonError('partial JSON update ends early');
    throw error;
  }
  return doc;
}
