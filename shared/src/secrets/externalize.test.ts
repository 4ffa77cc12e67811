import { describe, expect, it } from '@jest/globals';
import { REDACTED } from '../schemas/common.js';
import { externalizeSecrets, redactSecrets, secretSlots } from './externalize.js';

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

describe('secret maps (each value of `headers` is a secret)', () => {
  const mapFields = ['bearer_token', 'headers.*'];
  it('moves each header value into the managed secret, under a key the Secret accepts', () => {
    const config = {
      url: 'https://h',
      headers: { 'X-Api-Key': 'k3y', "we!rd'": 'v', 'X-Ref': ref('mine', 'k') },
    };
    const out = externalizeSecrets({ config, secretFields: mapFields, secretName: MANAGED });
    expect(out.issues).toEqual([]);
    expect(out.data['headers.X-Api-Key']).toBe('k3y');
    const weird = Object.keys(out.data).find((k) => k !== 'headers.X-Api-Key');
    expect(weird).toMatch(/^headers-[0-9a-f]{16}$/);
    expect(out.config.headers).toEqual({
      'X-Api-Key': ref(MANAGED, 'headers.X-Api-Key'),
      "we!rd'": ref(MANAGED, weird as string),
      'X-Ref': ref('mine', 'k'),
    });
    const read = redactSecrets(out.config, mapFields, MANAGED);
    expect(read.headers).toEqual({ 'X-Api-Key': REDACTED, "we!rd'": REDACTED, 'X-Ref': ref('mine', 'k') });
    // Sent back, every header keeps its stored reference.
    const again = externalizeSecrets({
      config: read,
      secretFields: mapFields,
      previous: out.config,
      secretName: MANAGED,
    });
    expect(again.config).toEqual(out.config);
    expect(again.retained.sort()).toEqual(['headers.X-Api-Key', weird].sort());
  });

  it('reports a <redacted> header without a stored value at the header', () => {
    const out = externalizeSecrets({
      config: { headers: { 'X-New': REDACTED } },
      secretFields: mapFields,
      previous: { headers: {} },
      secretName: MANAGED,
    });
    expect(out.issues).toEqual([{ loc: ['headers', 'X-New'], msg: expect.any(String), type: 'missing' }]);
  });

  it('lists the slots of fields and maps, absent ones skipped', () => {
    expect(secretSlots({ headers: { A: 'x' } }, mapFields)).toEqual([
      { loc: ['headers', 'A'], key: 'headers.A', value: 'x' },
    ]);
  });
});

describe('a change of destination', () => {
  it('refuses <redacted> for every kept secret, naming the field and the change', () => {
    const previous = { host: 'old', password: ref(MANAGED, 'password'), ssh_private_key: ref('mine', 'key') };
    const out = externalizeSecrets({
      config: { host: 'evil', password: REDACTED, ssh_private_key: REDACTED },
      secretFields: fields,
      previous,
      secretName: MANAGED,
      changedDestination: 'host',
    });
    expect(out.issues.map((i) => i.loc)).toEqual([['password'], ['ssh_private_key']]);
    expect(out.issues[0]?.msg).toContain('password is required again because host changed');
    expect(out.retained).toEqual([]);
  });

  it('accepts new values and explicit references with it', () => {
    const out = externalizeSecrets({
      config: { host: 'new', password: 'pw2', ssh_private_key: ref('mine', 'key') },
      secretFields: fields,
      previous: { host: 'old', password: ref(MANAGED, 'password') },
      secretName: MANAGED,
      changedDestination: 'host',
    });
    expect(out.issues).toEqual([]);
    expect(out.data).toEqual({ password: 'pw2' });
  });
});
