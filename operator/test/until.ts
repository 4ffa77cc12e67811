/** Reads every 200 ms until `test` holds, and returns what it read; throws with the last read after `ms`. */
export async function until<T>(read: () => Promise<T>, test: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!test(v)) {
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
    v = await read();
  }
  return v;
}
