import { createServer } from 'node:http';
import type { Express } from 'express';
import WebSocket from 'ws';
import { attachWebSockets } from '../src/features/logs/logs.socket.js';

// What the log stream tests (logs.test.ts, logs.kube.test.ts) share: the
// gateway's app on a listening server with the WebSocket streams attached,
// and a real WebSocket client that keeps every message.

export interface Frame {
  side?: 'source' | 'target';
  line: string;
}

/** A WebSocket client that keeps every message and how the socket ended. */
export class Client {
  readonly frames: Frame[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;
  readonly ws: WebSocket;

  constructor(url: string, protocols: string[]) {
    // ws 7 sends the subprotocols as given, so the spec's `Bearer <token>` (with its space) goes out raw.
    this.ws = new WebSocket(url, protocols);
    this.ws.on('message', (data) => this.frames.push(JSON.parse(String(data)) as Frame));
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) =>
      this.ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  /** Waits until a message satisfies `test`; returns it. */
  async until(test: (f: Frame) => boolean, ms = 15_000): Promise<Frame> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const hit = this.frames.find(test);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no such message; got ${JSON.stringify(this.frames)}`);
  }
}

/** The spec's subprotocols (spec 4.4): the marker and `Bearer <token>`. */
export const specProtocols = (token: string) => ['Authorization', `Bearer ${token}`];

/**
 * `app` listening on a free 127.0.0.1 port with the log streams attached:
 * `open(path, protocols)` connects a client to `ws://…/api<path>`; `close()`
 * ends the clients, the streams and the server.
 */
export async function logStreamServer(app: Express) {
  const server = createServer(app);
  const sockets = attachWebSockets(app, server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const base = `ws://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/api`;
  const clients: Client[] = [];
  return {
    open(path: string, protocols: string[]): Client {
      const c = new Client(`${base}${path}`, protocols);
      clients.push(c);
      return c;
    },
    async close(): Promise<void> {
      for (const c of clients) c.ws.terminate();
      sockets.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
