import { describe, expect, it } from '@jest/globals';
import { expectedHostKey, fingerprint, hostKeyAlgorithms, keyType } from './keys.js';

// `ssh_host_key` as users paste it: the `.pub` line, an ssh-keyscan line
// (host name first), or the fingerprint ssh-keygen -lf prints.

// An Ed25519 public key line, as in /etc/ssh/ssh_host_ed25519_key.pub.
const LINE = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl root@bastion';
const BLOB = Buffer.from(LINE.split(' ')[1] as string, 'base64');

describe('the host key Sluice expects', () => {
  it('reads a key line, with or without a host name before it, as its fingerprint and type', () => {
    const expected = { fingerprint: fingerprint(BLOB), type: 'ssh-ed25519' };
    expect(expectedHostKey(LINE)).toEqual(expected);
    expect(expectedHostKey(`bastion.example.com ${LINE}\n`)).toEqual(expected);
    // What `ssh-keygen -lf` prints for this key.
    expect(fingerprint(BLOB)).toBe('SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU');
    expect(keyType(BLOB)).toBe('ssh-ed25519');
  });

  it('reads a fingerprint as it is, trailing padding dropped', () => {
    const fp = fingerprint(BLOB);
    expect(expectedHostKey(` ${fp}= `)).toEqual({ fingerprint: fp });
  });

  it('offers the bastion only the configured key type (all RSA signatures for an RSA key)', () => {
    expect(hostKeyAlgorithms('ssh-ed25519')).toEqual(['ssh-ed25519']);
    expect(hostKeyAlgorithms('ssh-rsa')).toEqual(['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa']);
    expect(hostKeyAlgorithms(undefined)).toBeUndefined();
  });

  it('says a value that is neither', () => {
    expect(() => expectedHostKey('hello world')).toThrow(
      'The SSH host key (ssh_host_key) is neither a public key line nor a SHA256: fingerprint',
    );
  });
});
