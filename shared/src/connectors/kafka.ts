import { Type } from '@sinclair/typebox';
import { SASL_MECHANISMS, SECURITY_PROTOCOLS } from '../schemas/identity.js';
import { requiredWhen, StringEnum } from './fields.js';
import { secretField } from './secret.js';

// How a Kafka connector reaches its brokers: the fields KAFKA_SOURCE and
// KAFKA_TARGET share (spec 2.13), defined once so their schemas and forms
// cannot drift apart.

export const SASL_PROTOCOLS = ['SASL_PLAINTEXT', 'SASL_SSL'] as const;

/** Spec 2.13: SASL user and password are required when SASL is used. */
export const saslRule = () =>
  requiredWhen('security_protocol', SASL_PROTOCOLS, ['sasl_username', 'sasl_password']);

/** `security_protocol` and the SASL fields, in the order both Kafka types list them. */
export const kafkaSecurityFields = () => ({
  security_protocol: Type.Optional(
    StringEnum(SECURITY_PROTOCOLS, { default: 'PLAINTEXT', description: 'How to reach the brokers' }),
  ),
  sasl_mechanism: Type.Optional(
    StringEnum(SASL_MECHANISMS, { description: 'SASL mechanism when SASL is used' }),
  ),
  sasl_username: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'Required when SASL is used',
      title: 'SASL username',
    }),
  ),
  sasl_password: Type.Optional(secretField('Required when SASL is used', { title: 'SASL password' })),
});
