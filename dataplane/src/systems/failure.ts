import { OutboundAddressDeniedError } from '@sluice/shared/net';

// A failure of an external system is a sentence the user reads — as a
// pre-flight answer or as a worker's error alike: one sentence, from the most
// specific error of the chain the clients nest (the Kafka client reports a
// refused login as MultipleErrors → NetworkError → AuthenticationError), never
// a stack trace, a statement or a credential. Each system's errors.ts writes
// its sentences with what is here.

/**
 * A failure already said in a sentence for the user (a probe's answer, a
 * worker's error): every description keeps it as it is.
 */
export class SystemFailure extends Error {
  override readonly name = 'SystemFailure';
}

export interface Chained {
  message?: unknown;
  code?: unknown;
  errors?: unknown[];
  cause?: unknown;
}

/** Every error of a chain, outermost first. */
export function chain(error: unknown): Chained[] {
  const out: Chained[] = [];
  const walk = (e: unknown, depth: number) => {
    // Not `instanceof Error`: Node's own errors may come from another realm.
    if (depth > 6 || typeof e !== 'object' || e === null || !('message' in e)) return;
    out.push(e as Chained);
    for (const inner of (e as Chained).errors ?? []) walk(inner, depth + 1);
    walk((e as Chained).cause, depth + 1);
  };
  walk(error, 0);
  return out;
}

export const NETWORK: Record<string, (where: string) => string> = {
  ECONNREFUSED: (w) => `Connection refused by ${w}: nothing listens there`,
  ENOTFOUND: (w) => `The host of ${w} could not be resolved (DNS)`,
  EAI_AGAIN: (w) => `The host of ${w} could not be resolved (DNS)`,
  ETIMEDOUT: (w) => `Connecting to ${w} timed out`,
  EHOSTUNREACH: (w) => `${w} is unreachable from Sluice`,
  ENETUNREACH: (w) => `${w} is unreachable from Sluice`,
  ECONNRESET: (w) => `${w} closed the connection`,
};

/** What every description says first: the address policy's refusal, or a sentence a check already wrote. */
export function settled(error: unknown, errors: Chained[]): string | undefined {
  const denied = errors.find((e) => e instanceof OutboundAddressDeniedError);
  if (denied) return String(denied.message);
  if (error instanceof SystemFailure) return error.message;
  return undefined;
}

/** The sentence of a socket error code (ECONNREFUSED, ENOTFOUND, …), if it is a known one. */
export function describeNetworkCode(code: string | undefined, where: string): string | undefined {
  return code ? NETWORK[code]?.(where) : undefined;
}

/** `work`, or a SystemFailure "No answer from <what> within N s" once `timeoutMs` passed. */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SystemFailure(`No answer from ${what} within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
