#!/usr/bin/env node
// Asks a Kafka broker for its cluster metadata with a hand-made Metadata
// request (API key 3, version 4: supported by every broker from 1.0 to 4.x),
// no client library needed, and prints what it answered:
//
//   node probe.mjs 127.0.0.1:9092[,host:port…] [--wait SECONDS]
//
// Exits 0 once one of the addresses answered with at least one broker, 1
// otherwise. With --wait it retries (every 200 ms) until that many seconds
// have passed. scripts/with-kafka.sh uses it to decide whether an existing
// broker is reachable and when the one it started is ready.
import { connect } from 'node:net';

const args = process.argv.slice(2);
const waitIndex = args.indexOf('--wait');
const waitSeconds = waitIndex >= 0 ? Number(args[waitIndex + 1]) : 0;
const list = args.filter((_, i) => waitIndex < 0 || (i !== waitIndex && i !== waitIndex + 1))[0] ?? '';
const addresses = list
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
if (addresses.length === 0 || !Number.isFinite(waitSeconds)) {
  console.error('usage: node probe.mjs host:port[,host:port…] [--wait SECONDS]');
  process.exit(64);
}

function metadataRequest(correlationId) {
  const clientId = Buffer.from('sluice-probe');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4 + 1);
  let o = 0;
  o = body.writeInt16BE(3, o); // api key: Metadata
  o = body.writeInt16BE(4, o); // api version
  o = body.writeInt32BE(correlationId, o);
  o = body.writeInt16BE(clientId.length, o);
  o += clientId.copy(body, o);
  o = body.writeInt32BE(-1, o); // topics: null = all
  body.writeInt8(0, o); // allow_auto_topic_creation
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

function parseMetadata(buf, correlationId) {
  let o = 0;
  const int16 = () => ((o += 2), buf.readInt16BE(o - 2));
  const int32 = () => ((o += 4), buf.readInt32BE(o - 4));
  const string = () => {
    const n = int16();
    if (n < 0) return null;
    o += n;
    return buf.toString('utf8', o - n, o);
  };
  if (int32() !== correlationId) throw new Error('response to another request');
  int32(); // throttle_time_ms
  const brokers = [];
  for (let n = int32(); n > 0; n--) {
    const id = int32();
    const host = string();
    const port = int32();
    string(); // rack
    brokers.push({ id, host, port });
  }
  const clusterId = string();
  const controllerId = int32();
  return { brokers, clusterId, controllerId };
}

function probe(address, timeoutMs = 3000) {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let data = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
    socket.once('connect', () => socket.write(metadataRequest(7)));
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      if (data.length < 4 || data.length < 4 + data.readInt32BE(0)) return;
      clearTimeout(timer);
      socket.end();
      try {
        resolve(parseMetadata(data.subarray(4, 4 + data.readInt32BE(0)), 7));
      } catch (e) {
        reject(e);
      }
    });
    socket.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      reject(new Error('connection closed before a complete answer'));
    });
  });
}

const deadline = Date.now() + waitSeconds * 1000;
let lastError = '';
for (;;) {
  for (const address of addresses) {
    try {
      const m = await probe(address);
      if (m.brokers.length > 0) {
        const brokers = m.brokers.map((b) => `${b.id}@${b.host}:${b.port}`).join(',');
        console.log(`cluster ${m.clusterId} brokers ${brokers} controller ${m.controllerId}`);
        process.exit(0);
      }
      lastError = `${address}: the metadata lists no broker`;
    } catch (e) {
      lastError = `${address}: ${e.message}`;
    }
  }
  if (Date.now() >= deadline) break;
  await new Promise((r) => setTimeout(r, 200));
}
console.error(`no Kafka broker answered (${lastError})`);
process.exit(1);
