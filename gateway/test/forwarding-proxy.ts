import { createServer, request, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ForwardingProxy {
  /** The proxy's base URL (`http://127.0.0.1:<port>`). */
  url: string;
  close(): Promise<void>;
}

const listen = (server: Server) =>
  new Promise<AddressInfo>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)),
  );

const closing = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

/**
 * `app` on a loopback port behind a reverse proxy of one hop that does what
 * an ingress does with X-Forwarded-For (nginx's `$proxy_add_x_forwarded_for`):
 * it keeps whatever the client sent and appends the address it saw the
 * client connect from.
 */
export async function forwardingProxy(app: RequestListener): Promise<ForwardingProxy> {
  const upstream = createServer(app);
  const { port } = await listen(upstream);
  const proxy = createServer((req, res) => {
    const seen = req.socket.remoteAddress ?? '';
    const given = req.headers['x-forwarded-for'];
    const forwardedFor = given ? `${String(given)}, ${seen}` : seen;
    const out = request(
      {
        host: '127.0.0.1',
        port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, 'x-forwarded-for': forwardedFor },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  const { port: proxyPort } = await listen(proxy);
  return {
    url: `http://127.0.0.1:${proxyPort}`,
    close: async () => {
      await Promise.all([closing(proxy), closing(upstream)]);
    },
  };
}
