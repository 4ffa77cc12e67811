import { describe, expect, it } from '@jest/globals';
import { describeOracleError } from './connection.js';

// The driver's wording of a peer that closed the connection depends on
// timing: an end-of-file when it was reading, EPIPE when it was writing its
// connect packet. Both mean the same to a user while a connection is made.
const closed = (tail: string) =>
  Object.assign(
    new Error(
      `NJS-500: connection to Oracle Database was closed or broken\nNJS-501: connection to host 127.0.0.1 port 1521 terminated unexpectedly. (CONNECTION_ID=abc)\n${tail}`,
    ),
    { code: 'NJS-500' },
  );

describe('describeOracleError', () => {
  it('names a peer that closes while connecting as no Oracle listener, whichever way the driver saw it', () => {
    for (const tail of ['write EPIPE', 'read ECONNRESET', 'end-of-file on communication channel']) {
      expect(describeOracleError(closed(tail), '127.0.0.1:1521', 'connect')).toBe(
        '127.0.0.1:1521 closed the connection during the Oracle handshake: is an Oracle listener there? (NJS-500)',
      );
    }
  });

  it('names a connection broken in an open session as broken', () => {
    expect(describeOracleError(closed('write EPIPE'), '127.0.0.1:1521')).toBe(
      'The connection to Oracle at 127.0.0.1:1521 was closed or broken (NJS-500)',
    );
  });
});
