import { describe, expect, it } from '@jest/globals';
import { OutboundAddressDeniedError } from '@sluice/shared/net';
import { describeKafkaFailure } from './errors.js';

// The Kafka client nests its errors (MultipleErrors → NetworkError →
// AuthenticationError); the sentence comes from the most specific one.
const nested = (inner: Error) =>
  Object.assign(new Error('Cannot connect to any broker.'), {
    errors: [Object.assign(new Error('Connection failed.'), { cause: inner })],
  });

describe('describeKafkaFailure', () => {
  const where = 'k1:9092,k2:9092';

  it('names a refused login and what to check, never the password', () => {
    const said = describeKafkaFailure(
      nested(new Error('SASL authentication failed: bad password s3cret')),
      where,
    );
    expect(said).toBe(
      'The broker at k1:9092,k2:9092 refused the SASL login: check the user name, password and mechanism',
    );
  });

  it('names a network failure by its code', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:9092'), { code: 'ECONNREFUSED' });
    expect(describeKafkaFailure(nested(refused), where)).toBe(
      'Connection refused by k1:9092,k2:9092: nothing listens there',
    );
  });

  it('says the outbound policy refusal alone', () => {
    const denied = new OutboundAddressDeniedError('10.0.0.1', '10.0.0.1');
    expect(describeKafkaFailure(nested(denied), where)).toBe(denied.message);
  });

  it('falls back to the deepest message, on one line', () => {
    expect(describeKafkaFailure(nested(new Error('Something odd\n  at frame')), where)).toBe(
      'Kafka at k1:9092,k2:9092: Something odd',
    );
  });
});
