import { oneLine } from '@sluice/shared/util';
import { chain, NETWORK, settled } from '../failure.js';
import { brokerRefusal } from './broker-policy.js';

// The one description of a Kafka failure, for a pre-flight answer and a
// worker's error alike.

/**
 * One sentence for a failure of a Kafka client call against `where`
 * (the bootstrap list): the address policy, the login, TLS, the network.
 */
export function describeKafkaFailure(error: unknown, where: string): string {
  // A broker the address policy refused, named as the workers name it.
  const refused = brokerRefusal(error);
  if (refused) return `The ${refused}`;
  const errors = chain(error);
  const known = settled(error, errors);
  if (known !== undefined) return known;
  const messages = errors.map((e) => String(e.message ?? ''));
  const auth = messages.find((m) => /authenticat|sasl/i.test(m));
  if (auth) {
    return `The broker at ${where} refused the SASL login: check the user name, password and mechanism`;
  }
  const tls = messages.find((m) => /certificate|self[- ]signed|TLS|SSL|handshake/i.test(m));
  if (tls) return `The TLS connection to ${where} failed: ${oneLine(tls)}`;
  for (const e of errors) {
    const code = typeof e.code === 'string' ? e.code : '';
    const say = NETWORK[code];
    if (say) return say(where);
  }
  const timeout = messages.find((m) => /timed? ?out/i.test(m));
  if (timeout) return `No answer from ${where} within the time limit`;
  const unknownTopic = messages.find((m) => /unknown topic/i.test(m));
  if (unknownTopic) return oneLine(unknownTopic);
  // The deepest message is the most specific one.
  const last = [...messages].reverse().find((m) => m.trim().length > 0);
  return last ? `Kafka at ${where}: ${oneLine(last)}` : `Kafka at ${where} could not be reached`;
}
