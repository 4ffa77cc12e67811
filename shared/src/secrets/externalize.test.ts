import { describe, expect, it } from '@jest/globals';
import { REDACTED } from '../schemas/common.js';
import { externalizeSecrets, redactSecrets } from './externalize.js';

const MANAGED = 'sluice-conn-1234';
const ref = (name: string, key: string) => ({ valueFrom: { secretKeyRef: { name, key } } });
const fields = ['password', 'ssh_private_key'];

describe('externalizeSecrets', () => {
  it('moves inline values into the managed secret and leaves references in their place', () => {
    const config = { host: 'db.example', port: 5432, password: 'hunter2', ssh_private_key: 'a2V5' };
    const out = externalizeSecrets({ config, secretFields: fields, secretName: MANAGED });
    expect(out.issues).toEqual([]);
    expect(out.data).toEqual({ password: 'hunter2', ssh_private_key: 'a2V5' });
    expect(out.retained).toEqual([]);
    expect(out.config).toEqual({
      host: 'db.example',
      port: 5432,
      password: ref(MANAGED, 'password'),
      ssh_private_key: ref(MANAGED, 'ssh_private_key'),
    });
    expect(JSON.stringify(out.config)).not.toContain('hunter2');
  });

  it('keeps the stored reference for <redacted> and says which managed keys to carry over', () => {
    const previous = { host: 'old', password: ref(MANAGED, 'password'), ssh_private_key: ref('mine', 'key') };
    const config = { host: 'new', password: REDACTED, ssh_private_key: REDACTED };
    const out = externalizeSecrets({ config, secretFields: fields, previous, secretName: MANAGED });
    expect(out.issues).toEqual([]);
    expect(out.data).toEqual({});
    expect(out.retained).toEqual(['password']);
    expect(out.config).toEqual({
      host: 'new',
      password: ref(MANAGED, 'password'),
      ssh_private_key: ref('mine', 'key'),
    });
  });

  it('reports <redacted> without a stored value as an issue at the field', () => {
    for (const previous of [undefined, null, { host: 'x' }, { password: 'inline-legacy' }]) {
      const out = externalizeSecrets({
        config: { password: REDACTED },
        secretFields: fields,
        previous,
        secretName: MANAGED,
      });
      expect(out.issues).toEqual([
        { loc: ['password'], msg: expect.stringContaining(REDACTED), type: 'missing' },
      ]);
      expect(out.data).toEqual({});
    }
  });

  it('keeps a user reference as written, even one naming the managed secret', () => {
    const config = { password: ref('team-db', 'pw'), ssh_private_key: ref(MANAGED, 'ssh_private_key') };
    const out = externalizeSecrets({ config, secretFields: fields, secretName: MANAGED });
    expect(out.config).toEqual(config);
    expect(out.data).toEqual({});
    expect(out.issues).toEqual([]);
  });

  it('leaves non-secret fields alone, including strings that look like secrets, and absent fields absent', () => {
    const config = { user: 'hunter2', note: REDACTED, nested: { password: 'x' } };
    const out = externalizeSecrets({ config, secretFields: fields, secretName: MANAGED });
    expect(out.config).toEqual(config);
    expect(out.config).not.toHaveProperty('password');
    expect(out.data).toEqual({});
  });

  it('mutates neither the configuration nor the previous one', () => {
    const config = { host: 'h', password: 'pw', ssh_private_key: REDACTED, opts: { a: 1 } };
    const previous = { ssh_private_key: ref(MANAGED, 'ssh_private_key') };
    const configCopy = structuredClone(config);
    const previousCopy = structuredClone(previous);
    const out = externalizeSecrets({ config, secretFields: fields, previous, secretName: MANAGED });
    expect(config).toEqual(configCopy);
    expect(previous).toEqual(previousCopy);
    expect(out.config.opts).not.toBe(config.opts);
    expect(out.config.ssh_private_key).not.toBe(previous.ssh_private_key);
  });
});

describe('redactSecrets', () => {
  it('redacts references to the managed secret and keeps user references visible', () => {
    const stored = { host: 'h', password: ref(MANAGED, 'password'), ssh_private_key: ref('mine', 'key') };
    expect(redactSecrets(stored, fields, MANAGED)).toEqual({
      host: 'h',
      password: REDACTED,
      ssh_private_key: ref('mine', 'key'),
    });
  });

  it('redacts an inline value that slipped through, and leaves other fields and absent ones alone', () => {
    const stored = { user: 'admin', password: 'hunter2' };
    const out = redactSecrets(stored, fields, MANAGED);
    expect(out).toEqual({ user: 'admin', password: REDACTED });
    expect(out).not.toHaveProperty('ssh_private_key');
  });

  it('does not mutate its input', () => {
    const stored = { password: ref(MANAGED, 'password'), extra: { deep: true } };
    const copy = structuredClone(stored);
    const out = redactSecrets(stored, fields, MANAGED);
    expect(stored).toEqual(copy);
    expect(out.extra).not.toBe(stored.extra);
  });

  it('round-trips: a redacted read sent back keeps every stored reference', () => {
    const first = externalizeSecrets({
      config: { password: 'pw', ssh_private_key: ref('mine', 'key') },
      secretFields: fields,
      secretName: MANAGED,
    });
    const read = redactSecrets(first.config, fields, MANAGED);
    const again = externalizeSecrets({
      config: read,
      secretFields: fields,
      previous: first.config,
      secretName: MANAGED,
    });
    expect(again.config).toEqual(first.config);
    expect(again.retained).toEqual(['password']);
    expect(again.data).toEqual({});
  });
});
