import { describe, expect, it } from '@jest/globals';
import { SecretBox } from './secret-box.js';

describe('SecretBox', () => {
  const box = new SecretBox('master key of the service');

  it('round-trips and never shows the plaintext in the sealed form', () => {
    const sealed = box.seal('hunter2-password');
    expect(sealed.startsWith('sb1.')).toBe(true);
    expect(sealed).not.toContain('hunter2');
    expect(box.open(sealed)).toBe('hunter2-password');
  });

  it('uses a fresh nonce each time', () => {
    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  it('refuses another key and any tampering', () => {
    const sealed = box.seal('secret');
    expect(() => new SecretBox('another key').open(sealed)).toThrow();
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[2] as string, 'base64url');
    ct[0] = (ct[0] as number) ^ 1;
    parts[2] = ct.toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow();
    expect(() => box.open('plain text')).toThrow('Not a sealed secret');
  });
});
