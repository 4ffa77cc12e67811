import { createHash } from 'node:crypto';
import { createServer, isIP, Socket, type Server } from 'node:net';
import { Transform } from 'node:stream';
import ssh2, { type Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import type { OutboundPolicy } from '@sluice/shared/net';
import {
  authenticationRefused,
  bastionLost,
  bastionTimeout,
  describeSshFailure,
  forwardRefused,
  hostKeyMismatch,
  hostKeyMissing,
  hostKeyTypeMissing,
  SshTunnelError,
  sshWhere,
  unreachable,
} from './errors.js';
import { expectedHostKey, fingerprint, hostKeyAlgorithms, keyType, usablePrivateKey } from './keys.js';

// An SSH tunnel to a database (spec 2.14; docs/ssh-tunnels.md): a listener
// on 127.0.0.1 with an ephemeral port whose every connection is forwarded by
// the bastion (`direct-tcpip`, ssh2's forwardOut) to the database's host and
// port as the bastion sees them. Every driver (pg, mysql2, oracledb) then
// connects to 127.0.0.1:<port> as to any server.
//
// The outbound-address policy applies to the bastion (the one address Sluice
// dials); what the bastion reaches is the bastion's business. The bastion's
// host key must be the configured one (`ssh_host_key`); without one the
// connection is refused and the error names the key it presented: trusting
// the first key seen would trust whoever answers first, and neither the
// gateway nor a worker has a place to remember it.
//
// One SSH connection carries the forwards of every client of the same tunnel
// (a CDC worker's replication and snapshot sessions, its slot gauge). When the
// bastion drops, the clients' sockets fail with that sentence and the next
// connection to the listener connects to the bastion again: a worker's
// sessions fail and its restart resumes from what it acknowledged.

/** The tunnel fields of a connector's configuration, secrets resolved. */
export interface SshTunnelSettings {
  ssh_host: string;
  ssh_port?: number;
  ssh_user: string;
  /** Base64 of the key file. */
  ssh_private_key: string;
  ssh_private_key_passphrase?: string;
  ssh_host_key?: string;
}

/** host:port as the bastion sees it. */
export interface TunnelDestination {
  host: string;
  port: number;
}

export interface TunnelOptions {
  policy?: OutboundPolicy;
  /** Deadline of the TCP connection and of the SSH handshake each (default 15 s). */
  handshakeTimeoutMs?: number;
  /** Interval of the keepalives; the bastion is declared gone after 3 unanswered (default 10 s). */
  keepaliveMs?: number;
}

/** The tunnel settings of a configuration, or undefined when it has no `ssh_host`. */
export function sshTunnelOf(config: object): SshTunnelSettings | undefined {
  const c = config as Record<string, unknown>;
  if (typeof c.ssh_host !== 'string' || c.ssh_host === '') return undefined;
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const passphrase = str(c.ssh_private_key_passphrase);
  const hostKey = str(c.ssh_host_key);
  return {
    ssh_host: c.ssh_host,
    ...(typeof c.ssh_port === 'number' ? { ssh_port: c.ssh_port } : {}),
    ssh_user: str(c.ssh_user) ?? '',
    ssh_private_key: str(c.ssh_private_key) ?? '',
    ...(passphrase ? { ssh_private_key_passphrase: passphrase } : {}),
    ...(hostKey ? { ssh_host_key: hostKey } : {}),
  };
}

/** ` through SSH bastion host:22` for messages naming a tunnelled server; empty without a tunnel. */
export const viaBastion = (config: { ssh_host?: unknown; ssh_port?: unknown }): string =>
  typeof config.ssh_host === 'string' && config.ssh_host !== ''
    ? ` through SSH bastion ${sshWhere(config.ssh_host, typeof config.ssh_port === 'number' ? config.ssh_port : undefined)}`
    : '';

/** Copies each chunk: a buffer of the SSH library is not held past its callback (it may reuse it). */
const copying = () =>
  new Transform({
    transform(chunk: Buffer, _encoding, done) {
      done(null, Buffer.from(chunk));
    },
  });

export class SshTunnel {
  /** The port of the local listener on 127.0.0.1. */
  port = 0;
  /** The most recent failure of the tunnel (a forward refused, the bastion lost), and how many there were. */
  private lastFailure: SshTunnelError | undefined;
  private failures = 0;
  readonly bastion: string;
  private ssh: Promise<Client> | undefined;
  /** The SSH connection `ssh` resolved to, while it is open. */
  private ready: Client | undefined;
  private readonly server: Server;
  /** Client-side sockets handed out by `socket()`, failed with the tunnel's sentence when it breaks. */
  private readonly clients = new Set<Socket>();
  private closed = false;

  private constructor(
    private readonly settings: SshTunnelSettings,
    private readonly destination: TunnelDestination,
    private readonly options: TunnelOptions,
  ) {
    this.bastion = sshWhere(settings.ssh_host, settings.ssh_port);
    this.server = createServer((local) => this.forward(local));
  }

  /** Connects to the bastion (its failures are thrown here, in their sentence), then listens on 127.0.0.1. */
  static async open(
    settings: SshTunnelSettings,
    destination: TunnelDestination,
    options: TunnelOptions = {},
  ): Promise<SshTunnel> {
    const tunnel = new SshTunnel(settings, destination, options);
    try {
      await tunnel.connection();
      await new Promise<void>((resolve, reject) => {
        tunnel.server.once('error', reject);
        tunnel.server.listen(0, '127.0.0.1', () => resolve());
      });
      tunnel.port = (tunnel.server.address() as { port: number }).port;
      return tunnel;
    } catch (e) {
      await tunnel.close();
      throw e;
    }
  }

  /** `host:port` of the database, as messages name it. */
  get target(): string {
    return `${this.destination.host}:${this.destination.port}`;
  }

  /**
   * An unconnected socket for a driver to connect to 127.0.0.1:port (pg's
   * `stream`); when the tunnel fails it is destroyed with the tunnel's
   * sentence, so the driver reports that and not "connection terminated".
   */
  socket(): Socket {
    const s = new Socket();
    this.clients.add(s);
    s.once('close', () => this.clients.delete(s));
    return s;
  }

  /** A mark to ask `failureSince` with. */
  mark(): number {
    return this.failures;
  }

  /**
   * The tunnel's failure since `mark`, for a driver that dials the listener
   * itself (oracledb) and so only sees its connection closed.
   */
  failureSince(mark: number): SshTunnelError | undefined {
    return this.failures > mark ? this.lastFailure : undefined;
  }

  /** A socket connected to the local end (mysql2's `stream`). */
  connect(): Socket {
    return this.socket().connect(this.port, '127.0.0.1');
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const c of this.clients) c.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    const ssh = this.ssh;
    this.ssh = undefined;
    await ssh?.then((c) => c.end()).catch(() => undefined);
  }

  /** The ready SSH connection, or a new one when there is none (the bastion dropped). */
  private connection(): Promise<Client> {
    this.ssh ??= this.connectSsh().catch((e: unknown) => {
      this.ssh = undefined;
      throw e;
    });
    return this.ssh;
  }

  private async connectSsh(): Promise<Client> {
    const { settings, options } = this;
    const timeoutMs = options.handshakeTimeoutMs ?? 15_000;
    const key = usablePrivateKey(settings.ssh_private_key, settings.ssh_private_key_passphrase);
    const expected = settings.ssh_host_key ? expectedHostKey(settings.ssh_host_key) : undefined;
    const sock = await this.dial(timeoutMs);
    const client = new ssh2.Client();
    let verdict: SshTunnelError | undefined;
    const algorithms = hostKeyAlgorithms(expected?.type);
    const config: ConnectConfig = {
      sock,
      username: settings.ssh_user,
      ...key,
      readyTimeout: timeoutMs,
      keepaliveInterval: options.keepaliveMs ?? 10_000,
      keepaliveCountMax: 3,
      ...(algorithms ? { algorithms: { serverHostKey: algorithms as never } } : {}),
      hostVerifier: (presented: Buffer) => {
        const seen = `${keyType(presented)} ${fingerprint(presented)}`;
        if (!expected) verdict = hostKeyMissing(this.bastion, seen);
        else if (fingerprint(presented) !== expected.fingerprint)
          verdict = hostKeyMismatch(this.bastion, seen, expected.fingerprint);
        return verdict === undefined;
      },
    };
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve());
      client.once('error', (e: Error & { level?: string }) => {
        sock.destroy();
        if (verdict) reject(verdict);
        else if (e.level === 'client-authentication')
          reject(authenticationRefused(this.bastion, settings.ssh_user));
        else if (e.level === 'client-timeout')
          reject(bastionTimeout(this.bastion, Math.round(timeoutMs / 1000)));
        else if (expected?.type && /no matching host key/i.test(e.message))
          reject(hostKeyTypeMissing(this.bastion, expected.type));
        else reject(new SshTunnelError('dropped', describeSshFailure(e, this.bastion), { cause: e }));
      });
      client.connect(config);
    });
    this.ready = client;
    let lost: string | undefined;
    client.on('error', (e: Error) => {
      lost = e.message.includes('Keepalive timeout') ? 'no answer to keepalives' : e.message;
    });
    client.once('close', () => {
      // At once: a connection to the listener in this same turn must dial the bastion anew.
      if (this.ready === client) {
        this.ready = undefined;
        this.ssh = undefined;
      }
      if (this.closed) return;
      this.fail(bastionLost(this.bastion, lost ?? 'the bastion closed it'));
    });
    return client;
  }

  /** The TCP connection to the bastion, under the outbound policy. */
  private dial(timeoutMs: number): Promise<Socket> {
    const { ssh_host: host } = this.settings;
    const port = this.settings.ssh_port ?? 22;
    const policy = this.options.policy;
    return new Promise((resolve, reject) => {
      const bare = host.replace(/^\[(.*)\]$/, '$1');
      try {
        if (policy && isIP(bare)) policy.assertHost(bare);
      } catch (e) {
        reject(e);
        return;
      }
      const sock = new Socket();
      const timer = setTimeout(() => {
        sock.destroy();
        reject(unreachable(this.bastion, Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
      }, timeoutMs);
      sock.once('error', (e) => {
        clearTimeout(timer);
        // The policy's refusal is said as it is, like every system's.
        reject(e.name === 'OutboundAddressDeniedError' ? e : unreachable(this.bastion, e));
      });
      sock.once('connect', () => {
        clearTimeout(timer);
        sock.removeAllListeners('error');
        sock.setNoDelay(true);
        resolve(sock);
      });
      sock.connect(
        isIP(bare) || !policy ? { host: bare, port } : { host: bare, port, lookup: policy.lookup },
      );
    });
  }

  /** One connection to the listener: forwarded by the bastion to the database. */
  private forward(local: Socket): void {
    const { host, port } = this.destination;
    local.on('error', () => local.destroy());
    this.connection()
      .then(
        (ssh) =>
          new Promise<ClientChannel>((resolve, reject) =>
            ssh.forwardOut('127.0.0.1', local.remotePort ?? 0, host, port, (err, channel) =>
              err ? reject(err) : resolve(channel),
            ),
          ),
      )
      .then(
        (channel) => {
          if (local.destroyed) {
            channel.close();
            return;
          }
          channel.on('error', () => local.destroy());
          channel.once('close', () => local.end());
          local.once('close', () => channel.close());
          local.pipe(channel);
          channel.pipe(copying()).pipe(local);
        },
        (e: unknown) => {
          const failure =
            e instanceof SshTunnelError
              ? e
              : forwardRefused(
                  this.bastion,
                  this.target,
                  String((e as Error)?.message ?? e).replace(/^\(SSH\) /, ''),
                );
          this.fail(failure, local);
        },
      );
  }

  /** Fails the client sockets (one, or all when `local` is not given) with the tunnel's sentence. */
  private fail(failure: SshTunnelError, local?: Socket): void {
    this.lastFailure = failure;
    this.failures += 1;
    for (const c of this.clients) {
      if (!local || c.localPort === local.remotePort) c.destroy(failure);
    }
    local?.destroy();
  }
}

/** A tunnel in use; `release` closes it once its last user released it. */
export interface TunnelLease {
  tunnel: SshTunnel;
  release(): void;
}

const tunnels = new Map<string, { tunnel: Promise<SshTunnel>; users: number }>();

/**
 * The process's tunnel to `destination` through the configured bastion,
 * opened on first use and shared by every client of the same settings (a
 * digest of them is the key: no secret is kept as a map key).
 */
export async function acquireTunnel(
  settings: SshTunnelSettings,
  destination: TunnelDestination,
  options: TunnelOptions = {},
): Promise<TunnelLease> {
  const key = createHash('sha256')
    .update(JSON.stringify([settings, destination]))
    .digest('hex');
  let entry = tunnels.get(key);
  if (!entry) {
    entry = { tunnel: SshTunnel.open(settings, destination, options), users: 0 };
    tunnels.set(key, entry);
    const opened = entry;
    opened.tunnel.catch(() => {
      if (tunnels.get(key) === opened) tunnels.delete(key);
    });
  }
  entry.users += 1;
  const held = entry;
  let tunnel: SshTunnel;
  try {
    tunnel = await held.tunnel;
  } catch (e) {
    held.users -= 1;
    throw e;
  }
  let released = false;
  return {
    tunnel,
    release: () => {
      if (released) return;
      released = true;
      held.users -= 1;
      if (held.users === 0 && tunnels.get(key) === held) {
        tunnels.delete(key);
        void tunnel.close();
      }
    },
  };
}
