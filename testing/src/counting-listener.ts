import { connect, createServer, type Socket } from 'node:net';

// A TCP listener that counts the connections it accepts and, given an
// upstream, pipes them there: put in front of the real broker, it shows
// whether a client dialled an address at all (the outbound policy tests).

export interface CountingListener {
  port: number;
  accepted(): number;
  close(): Promise<void>;
}

/** Listens on `host` (a free port); closes each connection at once, or pipes it to `to`. */
export async function countingListener(
  host: string,
  to?: { host: string; port: number },
): Promise<CountingListener> {
  let accepted = 0;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const server = createServer((client) => {
    accepted++;
    track(client);
    client.on('error', () => undefined);
    if (!to) return void client.destroy();
    const upstream = connect(to.port, to.host);
    track(upstream);
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as { port: number }).port,
    accepted: () => accepted,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `host:port` split (the host may be a bracketed IPv6 address). */
export function hostPort(broker: string): { host: string; port: number } {
  const i = broker.lastIndexOf(':');
  return { host: broker.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(broker.slice(i + 1)) };
}
