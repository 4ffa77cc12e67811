// A produce request carries one record batch per partition, and the broker
// refuses a batch over its `message.max.bytes` (1 MiB by default). A worker's
// batch of 500 rows of a few KiB each — or rows keyed by all their columns,
// which writes each row twice — passes that easily, and the whole send then
// fails again on every retry. So a batch is sent as consecutive requests of
// at most MAX_REQUEST_BYTES of keys and values, in order (the idempotent
// producer keeps each partition's order across them).

/** Bytes of keys and values per produce request at most (well under the broker's 1 MiB default). */
export const MAX_REQUEST_BYTES = 512 * 1024;
/** What a record costs beyond its key and value in a record batch, about (varints, timestamps, attributes). */
const RECORD_OVERHEAD = 32;

interface Sized {
  key?: string | Buffer | undefined;
  value?: string | Buffer | undefined;
}

const bytes = (v: string | Buffer | undefined) =>
  v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;

/** `messages` cut into consecutive runs of at most `maxBytes` each (a larger single message alone). */
export function chunkBySize<T extends Sized>(messages: readonly T[], maxBytes = MAX_REQUEST_BYTES): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const m of messages) {
    const cost = bytes(m.key) + bytes(m.value) + RECORD_OVERHEAD;
    if (current.length > 0 && size + cost > maxBytes) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(m);
    size += cost;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
