import { createServer, type Server } from 'node:https';
import type { ServerResponse } from 'node:http';
import type { CoreV1Api } from '@kubernetes/client-node';
import { localCertificate } from './local-certificate.js';

// The log endpoint of a kubelet, for the test API server (no kubelet runs
// here). kube-apiserver serves `GET /api/v1/namespaces/{ns}/pods/{pod}/log` by
// proxying to the kubelet of the pod's node: it reads the Node object, picks
// an address (by --kubelet-preferred-address-types; the default order takes
// InternalIP when the node reports no Hostname or InternalDNS) and the port
// from status.daemonEndpoints.kubeletEndpoint, and requests
// `https://<address>:<port>/containerLogs/{ns}/{pod}/{container}?follow=…&tailLines=…`,
// streaming the answer back (flushed as it comes while following). Without
// --kubelet-certificate-authority it does not verify the kubelet's certificate
// (kube-apiserver's kubelet client: no CA, no verification), so a self-signed
// one does; it sends no client certificate unless --kubelet-client-certificate
// is set, and this kubelet asks for none.
//
// So this is an HTTPS server on 127.0.0.1 answering containerLogs the way the
// kubelet does — the last `tailLines` lines, then, with `follow=true`, each
// line written later in a chunk of its own until the container's log ends —
// plus the Node object pointing at it. What the test writes with `write` is
// what the container would have printed.

const CONTAINER_LOGS = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/;

interface ContainerLog {
  lines: string[];
  followers: Set<ServerResponse>;
}

export class KubeletLogServer {
  /** Every request the API server made, path and query, in order. */
  readonly requests: string[] = [];
  private readonly logs = new Map<string, ContainerLog>();

  private readonly server: Server;

  private constructor(tls: { key: string; cert: string }) {
    this.server = createServer(tls, (req, res) => this.serve(req.url ?? '/', req.method, res));
  }

  /** Listens on a free port of 127.0.0.1 with a self-signed certificate for that address. */
  static async start(): Promise<KubeletLogServer> {
    const kubelet = new KubeletLogServer(await localCertificate('kubelet'));
    await new Promise<void>((resolve) => kubelet.server.listen(0, '127.0.0.1', resolve));
    return kubelet;
  }

  /** The port it listens on (the Node's kubelet endpoint). */
  get port(): number {
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  /** The Node a kubelet on this server would register: its InternalIP and kubelet port. */
  async registerNode(core: CoreV1Api, name: string): Promise<void> {
    const node = await core.createNode({ body: { metadata: { name } } });
    // The kubelet reports addresses and endpoints as status (not kept on create).
    node.status = {
      addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      daemonEndpoints: { kubeletEndpoint: { Port: this.port } },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          lastHeartbeatTime: new Date(),
          lastTransitionTime: new Date(),
        },
      ],
    };
    await core.replaceNodeStatus({ name, body: node });
  }

  /** Lines the container printed: kept for later reads and sent to every open follow. */
  write(namespace: string, pod: string, container: string, ...lines: string[]): void {
    const log = this.log(namespace, pod, container);
    log.lines.push(...lines);
    for (const res of log.followers) res.write(lines.map((l) => `${l}\n`).join(''));
  }

  /** Follows of the container's log open now (the API server keeps one per following client). */
  following(namespace: string, pod: string, container: string): number {
    return this.logs.get(key(namespace, pod, container))?.followers.size ?? 0;
  }

  async close(): Promise<void> {
    for (const log of this.logs.values()) for (const res of log.followers) res.end();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private log(namespace: string, pod: string, container: string): ContainerLog {
    const k = key(namespace, pod, container);
    let log = this.logs.get(k);
    if (!log) this.logs.set(k, (log = { lines: [], followers: new Set() }));
    return log;
  }

  private serve(url: string, method: string | undefined, res: ServerResponse): void {
    this.requests.push(url);
    const { pathname, searchParams } = new URL(url, 'https://kubelet');
    const match = CONTAINER_LOGS.exec(pathname);
    if (method !== 'GET' || !match) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 page not found\n');
      return;
    }
    const [, namespace, pod, container] = match.map(decodeURIComponent) as [string, string, string, string];
    const log = this.logs.get(key(namespace, pod, container));
    if (!log) {
      // The kubelet's answer for a pod it does not run.
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`pod "${pod}" does not exist\n`);
      return;
    }
    const tail = searchParams.has('tailLines') ? Number(searchParams.get('tailLines')) : undefined;
    const lines = tail === undefined ? log.lines : tail > 0 ? log.lines.slice(-tail) : [];
    // No Content-Length: chunked, and the headers go out at once so that the
    // API server answers its client before the first line.
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.flushHeaders();
    if (lines.length) res.write(lines.map((l) => `${l}\n`).join(''));
    if (searchParams.get('follow') !== 'true') {
      res.end();
      return;
    }
    log.followers.add(res);
    res.once('close', () => log.followers.delete(res));
  }
}

function key(namespace: string, pod: string, container: string): string {
  return `${namespace}/${pod}/${container}`;
}
