import { describe, expect, it } from '@jest/globals';
import { inheritedWorkerEnv } from './worker-environment.js';

describe('inheritedWorkerEnv', () => {
  it("keeps the basics and Sluice's settings, never the service's own secrets", () => {
    const env = inheritedWorkerEnv({
      PATH: '/usr/bin',
      LC_ALL: 'C.UTF-8',
      SLUICE_STREAM_BROKERS: '127.0.0.1:9092',
      SLUICE_BATCH_SIZE: '500',
      DATABASE_URL: 'postgres://sluice:pw@db/sluice',
      SMTP_URL: 'smtp://user:pw@mail',
      SLUICE_MASTER_KEY: 'k',
      SLUICE_JWT_SECRET: 'j',
      SLUICE_ADMIN_PASSWORD: 'a',
      SLUICE_SECRET_0123456789ABCDEF: 'another worker’s secret',
      AWS_SECRET_ACCESS_KEY: 'x',
    });
    expect(env).toEqual({
      PATH: '/usr/bin',
      LC_ALL: 'C.UTF-8',
      SLUICE_STREAM_BROKERS: '127.0.0.1:9092',
      SLUICE_BATCH_SIZE: '500',
    });
  });
});
