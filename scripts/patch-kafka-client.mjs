#!/usr/bin/env node
// Three changes to @platformatic/kafka 2.12.1, the Kafka client of the workers
// and of the gateway's checks. Two for speed (bench/README.md "Pipeline": the
// client's per-record encoding cost the nested-messages-with-rules → Kafka
// case a third of its time per batch):
//
// - protocol/records.js writes all the records of a batch into one Buffer,
//   sizes first (records with headers, or a timestamp delta past 30 bits, go
//   through the client's own createRecord as before). The client built a
//   Writer, a DynamicBuffer and a small Buffer per field of every record.
// - clients/producer/producer.js: a message without headers, sent with the
//   default serializers (ours: keys and values are Buffers already), shares
//   one empty Map instead of allocating two.
//
// The bytes sent are the same (tested: dataplane/src/systems/kafka/
// patched-client.test.ts reads batches back with the client's own reader).
//
// One for the outbound address policy: network/connection.js honours an
// `outbound` option ({ lookup, assertHost }) on every broker it dials — the
// bootstrap list and every broker the cluster's metadata names — and a
// refusal (code EADDRDENIED) fails the connection without a retry
// (dataplane/src/systems/kafka/broker-policy.ts; the client has no hook of its
// own: it builds the socket's options itself).
// Run by `npm install` (postinstall) and by the Dockerfile after each
// install; applying it twice changes nothing. A client of another version is
// refused: check the change against the new code, then update VERSION and
// the snippets. Why not patch-package: the image's production install
// (`--omit=dev --workspace …`) runs without dev dependencies, and this is
// two exact replacements, each checked to match once.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const VERSION = '2.12.1';
const MARK = 'Patched (Sluice, patches/)';

const PATCHES = [
  {
    file: 'dist/protocol/records.js',
    find: String.raw`export function readRecord(reader) {`,
    replace: String.raw`const varintSize = (u) => (u < 0x80 ? 1 : u < 0x4000 ? 2 : u < 0x200000 ? 3 : u < 0x10000000 ? 4 : 5);
function writeVarint(buf, off, u) {
    while (u >= 0x80) {
        buf[off++] = (u & 0x7f) | 0x80;
        u >>>= 7;
    }
    buf[off++] = u;
    return off;
}
const zz = (n) => ((n << 1) ^ (n >> 31)) >>> 0;
// Patched (Sluice, patches/): every record of a batch is written into one
// Buffer, sizes first, then the bytes, instead of a Writer, a DynamicBuffer and
// a Buffer per field of each record. Records with headers, or a timestamp
// delta past 30 bits, are written by createRecord as before.
function encodeRecords(messages, firstTimestamp) {
    const n = messages.length;
    const sizes = new Array(n);
    let total = 0;
    for (let i = 0; i < n; i++) {
        const m = messages[i];
        const tsDelta = m.timestamp - firstTimestamp;
        if (tsDelta > 0x3fffffffn || tsDelta < -0x3fffffffn || (m.headers && m.headers.size > 0)) {
            const b = createRecord(m, i, firstTimestamp).buffer;
            sizes[i] = b;
            total += b.length;
            continue;
        }
        const key = m.key;
        const value = m.value;
        const body = 1 + varintSize(zz(Number(tsDelta))) + varintSize(zz(i)) +
            (key == null ? 1 : varintSize(zz(key.length)) + key.length) +
            (value == null ? 1 : varintSize(zz(value.length)) + value.length) + 1;
        sizes[i] = body;
        total += varintSize(zz(body)) + body;
    }
    const out = Buffer.allocUnsafe(total);
    let o = 0;
    for (let i = 0; i < n; i++) {
        const size = sizes[i];
        if (typeof size !== 'number') {
            o += size.copy(out, o);
            continue;
        }
        const m = messages[i];
        const key = m.key;
        const value = m.value;
        o = writeVarint(out, o, zz(size));
        out[o++] = 0; // attributes
        o = writeVarint(out, o, zz(Number(m.timestamp - firstTimestamp)));
        o = writeVarint(out, o, zz(i));
        if (key == null) out[o++] = 1; // -1, zigzag
        else {
            o = writeVarint(out, o, zz(key.length));
            o += key.copy(out, o);
        }
        if (value == null) out[o++] = 1;
        else {
            o = writeVarint(out, o, zz(value.length));
            o += value.copy(out, o);
        }
        out[o++] = 0; // no headers
    }
    return out;
}
export function readRecord(reader) {`,
  },
  {
    file: 'dist/protocol/records.js',
    find: String.raw`        const record = createRecord(messages[i], i, firstTimestamp);
        buffer.appendFrom(record.dynamicBuffer);
    }
`,
    replace: String.raw`    }
    buffer.append(encodeRecords(messages, firstTimestamp));
`,
  },
  {
    file: 'dist/clients/producer/producer.js',
    find: String.raw`export function noopSerializer(data) {`,
    replace: String.raw`/** Never written to: shared by the messages that have no headers. */
const NO_HEADERS = new Map();
export function noopSerializer(data) {`,
  },
  {
    file: 'dist/clients/producer/producer.js',
    find: String.raw`            let headers = new Map();
            const serializedHeaders = new Map();
`,
    replace: String.raw`            // Patched (Sluice, patches/): a message without headers, sent with the default
            // serializers, shares one empty Map instead of allocating two.
            const plain = !message.headers && this.#keySerializer === noopSerializer && this.#valueSerializer === noopSerializer;
            let headers = plain ? NO_HEADERS : new Map();
            const serializedHeaders = plain ? NO_HEADERS : new Map();
`,
  },
  {
    file: 'dist/network/connection.js',
    find: String.raw`            const connectionOptions = {
                timeout: this.#options.connectTimeout
            };
`,
    replace: String.raw`            const connectionOptions = {
                timeout: this.#options.connectTimeout
            };
            // Patched (Sluice, patches/): the outbound option, an address policy
            // ({ lookup, assertHost }), applies to every broker this client dials,
            // bootstrap or named by the cluster's metadata: its lookup resolves the
            // name for the socket (the address checked is the address connected
            // to), and assertHost refuses an IP literal, which node:net does not
            // look up, before any socket is opened.
            const outbound = this.#options.outbound;
            if (outbound) {
                connectionOptions.lookup = outbound.lookup;
                try {
                    outbound.assertHost(host);
                }
                catch (cause) {
                    this.#host = host;
                    this.#port = port;
                    process.nextTick(() => this.#onConnectionError(host, port, diagnosticContext, cause));
                    return callback[kCallbackPromise];
                }
            }
`,
  },
  {
    file: 'dist/network/connection.js',
    find: String.raw`        const error = new NetworkError(${'`'}Connection to ${'$'}{host}:${'$'}{port} failed.${'`'}, { cause });
`,
    replace: String.raw`        // Patched (Sluice, patches/): a refusal of the outbound policy is final
        // (no retry), and names the broker.
        const refused = cause?.code === 'EADDRDENIED';
        const error = new NetworkError(${'`'}Connection to ${'$'}{host}:${'$'}{port} failed.${'`'}, refused ? { cause, canRetry: false, broker: { host, port } } : { cause });
`,
  },
  {
    file: 'dist/network/connection.js',
    find: String.raw`        this.#socket.end();
`,
    replace: String.raw`        this.#socket?.end();
`,
  },
];

// Run from the repository (or image) root: npm hoists the client there.
const root = join(process.cwd(), 'node_modules', '@platformatic', 'kafka');
if (!existsSync(join(root, 'package.json'))) {
  console.log('patch-kafka-client: @platformatic/kafka is not installed here; nothing to patch');
  process.exit(0);
}
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (version !== VERSION) {
  console.error(
    `patch-kafka-client: @platformatic/kafka is ${version}, the patch is for ${VERSION}: ` +
      'check scripts/patch-kafka-client.mjs against the new version',
  );
  process.exit(1);
}
const files = [...new Set(PATCHES.map((p) => p.file))];
let applied = 0;
for (const file of files) {
  const path = join(root, file);
  let text = readFileSync(path, 'utf8');
  if (text.includes(MARK)) continue; // applied already
  applied += 1;
  for (const p of PATCHES.filter((x) => x.file === file)) {
    const at = text.indexOf(p.find);
    if (at < 0 || text.indexOf(p.find, at + 1) >= 0) {
      console.error(`patch-kafka-client: ${file} does not hold the expected code once; not patched`);
      process.exit(1);
    }
    text = text.slice(0, at) + p.replace + text.slice(at + p.find.length);
  }
  writeFileSync(path, text);
}
console.log(
  applied > 0
    ? `patch-kafka-client: @platformatic/kafka ${VERSION} patched (${applied} files)`
    : `patch-kafka-client: @platformatic/kafka ${VERSION} already patched`,
);
