import { afterEach, describe, expect, it } from '@jest/globals';
import { constants, generateKeyPairSync, privateDecrypt } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { workerOutboundPolicy } from '../src/outbound.js';
import { openMysql } from '../src/systems/mysql/connection.js';

// MySQL 8's default authentication, caching_sha2_password, through the
// connection path every MySQL source uses (systems/mysql/connection.ts:
// mysql2's handshake, the socket under the outbound policy). MySQL cannot
// run here, so a server on 127.0.0.1 speaks the server's side of the
// exchange as MySQL's protocol documentation describes it ("Caching SHA-2
// Authentication Exchanges"), with the one piece recorded from a real
// server: the 20-byte scramble of a MySQL 8 greeting and the token a client
// must answer it with for the password "hola", snooped with Wireshark by
// Boost.MySQL (test/unit/test/sansio/handshake/caching_sha2_password.cpp,
// Boost Software License 1.0).

const SCRAMBLE = Buffer.from([
  0x3e, 0x3b, 0x4, 0x55, 0x4, 0x70, 0x16, 0x3a, 0x4c, 0x15, 0x35, 0x3, 0x15, 0x76, 0x73, 0x22, 0x46, 0x8,
  0x18, 0x1,
]);
const TOKEN_FOR_HOLA = Buffer.from([
  0xa1, 0xc1, 0xe1, 0xe9, 0x1b, 0xb6, 0x54, 0x4b, 0xa7, 0x37, 0x4b, 0x9c, 0x56, 0x6d, 0x69, 0x3e, 0x6, 0xca,
  0x7, 0x2, 0x98, 0xac, 0xd1, 0x6, 0x18, 0xc6, 0x90, 0x38, 0x9d, 0x88, 0xe1, 0x20,
]);

const CLIENT = {
  LONG_PASSWORD: 0x1,
  CONNECT_WITH_DB: 0x8,
  PROTOCOL_41: 0x200,
  TRANSACTIONS: 0x2000,
  SECURE_CONNECTION: 0x8000,
  PLUGIN_AUTH: 0x80000,
  PLUGIN_AUTH_LENENC_CLIENT_DATA: 0x200000,
};
/** What the server offers: no SSL, so `preferred` falls back to plain TCP (as against a server without TLS). */
const SERVER_CAPABILITIES = Object.values(CLIENT).reduce((a, b) => a | b, 0);

function packet(seq: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUIntLE(payload.length, 0, 3);
  header.writeUInt8(seq, 3);
  return Buffer.concat([header, payload]);
}

/** Protocol::HandshakeV10 of a MySQL 8 server whose default plugin is caching_sha2_password. */
function greeting(): Buffer {
  const caps = Buffer.alloc(4);
  caps.writeUInt32LE(SERVER_CAPABILITIES);
  return Buffer.concat([
    Buffer.from([10]),
    Buffer.from('8.0.36\0'),
    Buffer.from([1, 0, 0, 0]), // connection id
    SCRAMBLE.subarray(0, 8),
    Buffer.from([0]),
    caps.subarray(0, 2),
    Buffer.from([255]), // utf8mb4_0900_ai_ci
    Buffer.from([2, 0]), // status: autocommit
    caps.subarray(2, 4),
    Buffer.from([21]), // auth plugin data length (20 + NUL)
    Buffer.alloc(10),
    SCRAMBLE.subarray(8),
    Buffer.from([0]),
    Buffer.from('caching_sha2_password\0'),
  ]);
}

const OK = Buffer.from([0, 0, 0, 2, 0, 0, 0]);
const ACCESS_DENIED = Buffer.concat([
  Buffer.from([0xff, 0x15, 0x04]), // 1045
  Buffer.from("#28000Access denied for user 'sluice'@'localhost' (using password: YES)"),
]);

/** The auth response of a HandshakeResponse41 (after capabilities, max packet, charset, filler, user). */
function authResponse(payload: Buffer): Buffer {
  const caps = payload.readUInt32LE(0);
  let pos = 32;
  pos = payload.indexOf(0, pos) + 1;
  const length = payload[pos]!; // a one-byte length-encoded integer for answers under 251 bytes
  if (!(caps & CLIENT.PLUGIN_AUTH_LENENC_CLIENT_DATA) && !(caps & CLIENT.SECURE_CONNECTION)) {
    throw new Error('client sent no length-prefixed auth response');
  }
  return payload.subarray(pos + 1, pos + 1 + length);
}

interface Exchange {
  tokens: Buffer[];
  fullAuthPasswords: string[];
}

/**
 * A MySQL 8 server's side of caching_sha2_password. `cached`: the server
 * has the user's password in its cache (fast authentication: the token
 * checked against the recorded one); otherwise it asks for full
 * authentication, sends its RSA public key when asked (plain TCP), and
 * checks the decrypted password.
 */
async function fakeMysql8(cached: boolean): Promise<{ server: Server; port: number; exchange: Exchange }> {
  const exchange: Exchange = { tokens: [], fullAuthPasswords: [] };
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = publicKey.export({ type: 'spki', format: 'pem' });
  const server = createServer((socket: Socket) => {
    let buffered = Buffer.alloc(0);
    let step = 0;
    socket.on('error', () => undefined);
    socket.write(packet(0, greeting()));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4) {
        const length = buffered.readUIntLE(0, 3);
        if (buffered.length < 4 + length) return;
        const seq = buffered[3]!;
        const payload = buffered.subarray(4, 4 + length);
        buffered = buffered.subarray(4 + length);
        step += 1;
        if (step === 1) {
          const token = authResponse(payload);
          exchange.tokens.push(Buffer.from(token));
          if (cached) {
            const ok = token.equals(TOKEN_FOR_HOLA);
            // AuthMoreData fast_auth_success, then OK; or the server's 1045.
            if (ok) socket.write(Buffer.concat([packet(seq + 1, Buffer.from([1, 3])), packet(seq + 2, OK)]));
            else socket.end(packet(seq + 1, ACCESS_DENIED));
          } else {
            socket.write(packet(seq + 1, Buffer.from([1, 4]))); // perform_full_authentication
          }
        } else if (!cached && step === 2) {
          // The client asks for the server's public key (0x02) on a connection without TLS.
          if (!payload.equals(Buffer.from([2]))) return void socket.end(packet(seq + 1, ACCESS_DENIED));
          socket.write(packet(seq + 1, Buffer.concat([Buffer.from([1]), Buffer.from(pem)])));
        } else if (!cached && step === 3) {
          const xored = privateDecrypt(
            { key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' },
            payload,
          );
          const clear = Buffer.from(xored.map((b, i) => b ^ SCRAMBLE[i % SCRAMBLE.length]!));
          const password = clear.subarray(0, clear.indexOf(0)).toString('utf8');
          exchange.fullAuthPasswords.push(password);
          if (password === 'hola') socket.write(packet(seq + 1, OK));
          else socket.end(packet(seq + 1, ACCESS_DENIED));
        } else {
          socket.end(); // COM_QUIT, or anything after the handshake
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, exchange };
}

describe('caching_sha2_password through the MySQL connection path', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  const open = (port: number, password: string) =>
    openMysql(
      { host: '127.0.0.1', port, user: 'sluice', password, ssl_mode: 'preferred' },
      { policy: workerOutboundPolicy(), timeoutMs: 5000 },
    );

  it('answers the recorded scramble with the recorded token and is let in (fast authentication)', async () => {
    const fake = await fakeMysql8(true);
    server = fake.server;
    const session = await open(fake.port, 'hola');
    await session.close();
    expect(fake.exchange.tokens.map((t) => t.toString('hex'))).toContain(TOKEN_FOR_HOLA.toString('hex'));
  });

  it("fails with the server's access-denied error for another password", async () => {
    const fake = await fakeMysql8(true);
    server = fake.server;
    await expect(open(fake.port, 'adios')).rejects.toMatchObject({ errno: 1045 });
    expect(fake.exchange.tokens.length).toBeGreaterThan(0);
    expect(fake.exchange.tokens.every((t) => !t.equals(TOKEN_FOR_HOLA))).toBe(true);
  });

  it("completes full authentication over plain TCP with the password encrypted to the server's RSA key", async () => {
    const fake = await fakeMysql8(false);
    server = fake.server;
    const session = await open(fake.port, 'hola');
    await session.close();
    expect(fake.exchange.fullAuthPasswords).toEqual(['hola']);
  });
});
