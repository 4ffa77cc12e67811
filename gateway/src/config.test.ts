import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from './config.js';

const dataDir = () => mkdtempSync(join(tmpdir(), 'sluice-config-'));

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const dir = dataDir();
    const c = loadConfig({ SLUICE_DATA_DIR: dir });
    expect(c).toMatchObject({
      port: 8080,
      databaseUrl: undefined,
      dataDir: dir,
      tokenLifetimeS: 86400,
      allowRegistration: true,
      requireVerified: false,
      deploymentMode: 'SELF_HOSTED',
      smtpUrl: undefined,
      passwordMinLength: 8,
      clusterAdapter: 'embedded',
    });
  });

  it('generates the JWT secret once, keeps it private in the data dir, and reuses it', () => {
    const dir = dataDir();
    const first = loadConfig({ SLUICE_DATA_DIR: dir });
    const second = loadConfig({ SLUICE_DATA_DIR: dir });
    expect(first.jwtSecret).toHaveLength(64);
    expect(second.jwtSecret).toBe(first.jwtSecret);
    expect(readFileSync(join(dir, 'jwt-secret'), 'utf8').trim()).toBe(first.jwtSecret);
    expect(statSync(join(dir, 'jwt-secret')).mode & 0o777).toBe(0o600);
    expect(first.secretKey).not.toBe(first.jwtSecret);
  });

  it('uses given secrets and refuses short ones', () => {
    const secret = 'x'.repeat(40);
    expect(loadConfig({ SLUICE_DATA_DIR: dataDir(), SLUICE_JWT_SECRET: secret }).jwtSecret).toBe(secret);
    expect(() => loadConfig({ SLUICE_DATA_DIR: dataDir(), SLUICE_JWT_SECRET: 'short' })).toThrow(ConfigError);
  });

  it('reads booleans, numbers and modes strictly', () => {
    const c = loadConfig({
      SLUICE_DATA_DIR: dataDir(),
      PORT: '9000',
      SLUICE_ALLOW_REGISTRATION: 'false',
      SLUICE_REQUIRE_VERIFIED: 'yes',
      SLUICE_DEPLOYMENT_MODE: 'cloud',
      SLUICE_TOKEN_LIFETIME_S: '60',
      SLUICE_CORS_ORIGINS: 'https://a.example, https://b.example',
    });
    expect(c).toMatchObject({
      port: 9000,
      allowRegistration: false,
      requireVerified: true,
      deploymentMode: 'CLOUD',
      tokenLifetimeS: 60,
      corsOrigins: ['https://a.example', 'https://b.example'],
    });
    expect(() => loadConfig({ SLUICE_DATA_DIR: dataDir(), SLUICE_ALLOW_REGISTRATION: 'maybe' })).toThrow(
      /SLUICE_ALLOW_REGISTRATION/,
    );
    expect(() => loadConfig({ SLUICE_DATA_DIR: dataDir(), SLUICE_DEPLOYMENT_MODE: 'ONPREM' })).toThrow(
      ConfigError,
    );
    expect(() => loadConfig({ SLUICE_DATA_DIR: dataDir(), PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ SLUICE_DATA_DIR: dataDir(), SLUICE_ADMIN_EMAIL: 'a@b.c' })).toThrow(
      /SLUICE_ADMIN_PASSWORD/,
    );
  });

  it('reads the watched namespaces of the mirror: the release namespace first, a list, or every one', () => {
    const at = (v?: string) =>
      loadConfig({ SLUICE_DATA_DIR: dataDir(), SLUICE_NAMESPACE: 'sluice', SLUICE_WATCH_NAMESPACES: v })
        .watchNamespaces;
    expect(at()).toEqual(['sluice']);
    expect(at('team-a, team-b,sluice')).toEqual(['sluice', 'team-a', 'team-b']);
    expect(at('*')).toBeUndefined();
    expect(() => at('team-a,Team_B')).toThrow(/SLUICE_WATCH_NAMESPACES.*"Team_B"/);
  });

  it("keeps workers in SLUICE_WORKER_NAMESPACE, by default the control plane's namespace", () => {
    const cfg = (env: Record<string, string>) => loadConfig({ SLUICE_DATA_DIR: dataDir(), ...env });
    expect(cfg({ SLUICE_NAMESPACE: 'sluice' })).toMatchObject({
      namespace: 'sluice',
      workerNamespace: 'sluice',
    });
    expect(cfg({ SLUICE_NAMESPACE: 'sluice', SLUICE_WORKER_NAMESPACE: 'sluice-workers' })).toMatchObject({
      namespace: 'sluice',
      workerNamespace: 'sluice-workers',
      watchNamespaces: ['sluice'],
    });
    expect(() => cfg({ SLUICE_WORKER_NAMESPACE: 'Workers_1' })).toThrow(
      new ConfigError('SLUICE_WORKER_NAMESPACE must be a DNS-1123 label, got "Workers_1"'),
    );
  });

  describe('SLUICE_TRUST_PROXY', () => {
    const trust = (v?: string) =>
      loadConfig({ SLUICE_DATA_DIR: dataDir(), SLUICE_TRUST_PROXY: v }).trustProxy;

    it('trusts no proxy by default, a number of hops, or a list of addresses and subnets', () => {
      expect(trust()).toBe(false);
      expect(trust('false')).toBe(false);
      expect(trust('0')).toBe(false);
      expect(trust('1')).toBe(1);
      expect(trust('2')).toBe(2);
      expect(trust('loopback, 10.0.0.0/8,192.168.1.7, fd00::/8,10.1.0.0/255.255.0.0,uniquelocal')).toEqual([
        'loopback',
        '10.0.0.0/8',
        '192.168.1.7',
        'fd00::/8',
        '10.1.0.0/255.255.0.0',
        'uniquelocal',
      ]);
    });

    it('refuses true, which would let any client name its own address, and says what to set instead', () => {
      for (const v of ['true', 'TRUE', 'yes', 'on']) {
        expect(() => trust(v)).toThrow(ConfigError);
        expect(() => trust(v)).toThrow(/escape the rate limits; set the number of proxies .* \(e\.g\. 1\)/);
      }
    });

    it('refuses what Express would not take as a proxy address', () => {
      for (const v of [
        '10.0.0.0/33',
        'proxy.example.com',
        '10.0.0.1,',
        '-1',
        '1.5',
        'fd00::/129',
        '10.0.0.0/8/8',
      ]) {
        expect(() => trust(v)).toThrow(/SLUICE_TRUST_PROXY must be false, a number of proxy hops/);
      }
    });
  });
});
