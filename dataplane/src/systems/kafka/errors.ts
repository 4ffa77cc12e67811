import { brokerRefusal } from './broker-policy.js';

/**
 * The client's error and what it wraps, in one line (no stack); a broker the
 * outbound policy refused is named alone.
 */
export function describeKafkaError(error: unknown): string {
  const refused = brokerRefusal(error);
  if (refused) return refused;
  const parts: string[] = [];
  const walk = (e: unknown, depth: number) => {
    if (depth > 4 || typeof e !== 'object' || e === null || !('message' in e)) return;
    const { message, errors, cause } = e as Error & { errors?: unknown[] };
    if (message && !parts.includes(message)) parts.push(String(message));
    for (const inner of errors ?? []) walk(inner, depth + 1);
    walk(cause, depth + 1);
  };
  walk(error, 0);
  return parts.length ? parts.join(': ').slice(0, 500) : String(error);
}
