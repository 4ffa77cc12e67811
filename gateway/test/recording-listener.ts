import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the listener received. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/**
 * A local HTTP listener on 127.0.0.1 that answers 200 to everything and
 * records what it received, in order: it stands for a webhook, or for an
 * attacker's host that must receive nothing from a refused request.
 */
export interface RecordingListener {
  /** `http://127.0.0.1:<port><path>`. */
  url: string;
  received: ReceivedRequest[];
  close(): Promise<void>;
}

export async function startRecordingListener(path = '/x'): Promise<RecordingListener> {
  const received: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.writeHead(200).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
