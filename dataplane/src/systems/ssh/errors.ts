import { oneLine } from '@sluice/shared/util';
import { chain, describeNetworkCode, settled, SystemFailure } from '../failure.js';

// The one description of an SSH tunnel's failures, for a pre-flight answer,
// a connector's status and a worker's log alike. Each says which hop failed
// (the bastion, its login, its host key, the database behind it) and what to
// check; none holds the private key, its passphrase or the database password.

export type SshFailureKind = 'unreachable' | 'auth' | 'host-key' | 'key' | 'forward' | 'dropped' | 'timeout';

/** A tunnel failure already said in a sentence; `kind` says which hop failed. */
export class SshTunnelError extends SystemFailure {
  constructor(
    readonly kind: SshFailureKind,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `bastion.example.com:22`, how a bastion is named in messages. */
export const sshWhere = (host: string, port: number | undefined) => `${host}:${port ?? 22}`;

export const unreachable = (bastion: string, error: unknown) => {
  const code = chain(error)
    .map((e) => (typeof e.code === 'string' ? e.code : undefined))
    .find((c) => c !== undefined);
  const say = describeNetworkCode(code, `SSH bastion ${bastion}`);
  return new SshTunnelError(
    'unreachable',
    `${say ?? `SSH bastion ${bastion} could not be reached (${oneLine(String((error as Error)?.message ?? error))})`}: check ssh_host and ssh_port, and that the bastion accepts connections from Sluice`,
    { cause: error },
  );
};

export const authenticationRefused = (bastion: string, user: string) =>
  new SshTunnelError(
    'auth',
    `SSH bastion ${bastion} refused the login of user "${user}" with the configured private key: check ssh_user, and that the key's public half is in that user's ~/.ssh/authorized_keys on the bastion`,
  );

export const hostKeyMismatch = (bastion: string, seen: string, expected: string) =>
  new SshTunnelError(
    'host-key',
    `SSH bastion ${bastion} presented the host key ${seen}, not the expected ${expected} (ssh_host_key): the bastion's key changed or the connection is intercepted. Connect only once its administrator confirms ${seen}, then set ssh_host_key to it`,
  );

export const hostKeyMissing = (bastion: string, seen: string) =>
  new SshTunnelError(
    'host-key',
    `SSH bastion ${bastion} cannot be trusted without its host key: set ssh_host_key to its public key line or its fingerprint. It presented ${seen}; check it with the bastion's administrator (ssh-keygen -lf on the bastion's host key) before setting it`,
  );

export const hostKeyTypeMissing = (bastion: string, type: string) =>
  new SshTunnelError(
    'host-key',
    `SSH bastion ${bastion} has no ${type} host key, the type of ssh_host_key: check that ssh_host_key is this bastion's key`,
  );

export const forwardRefused = (bastion: string, target: string, reason: string) =>
  new SshTunnelError(
    'forward',
    `SSH bastion ${bastion} could not open a connection to ${target} (${reason}): the database refuses connections from the bastion or is not there; host and port are as the bastion sees them, and the bastion must allow TCP forwarding`,
  );

export const bastionLost = (bastion: string, why: string) =>
  new SshTunnelError('dropped', `The connection to SSH bastion ${bastion} was lost (${why})`);

export const bastionTimeout = (bastion: string, seconds: number) =>
  new SshTunnelError(
    'timeout',
    `No SSH handshake with bastion ${bastion} within ${seconds} s: check that ssh_port is the bastion's SSH port`,
  );

/** One sentence for a failure of an ssh2 connection that was not already said (a protocol error). */
export function describeSshFailure(error: unknown, bastion: string): string {
  const errors = chain(error);
  const known = settled(error, errors);
  if (known !== undefined) return known;
  const first = errors[0];
  return `SSH bastion ${bastion}: ${oneLine(String(first?.message ?? error))}`;
}
