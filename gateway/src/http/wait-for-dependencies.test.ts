import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { StartupError } from '@perfwatch/common';
import { isSettingsError, mongoHosts, startStartingServer, waitForDependency } from './wait-for-dependencies.ts';

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

describe('startStartingServer', () => {
  it('is live but not ready, and answers every other path with a 503 envelope naming the wait', async () => {
    const starting = await startStartingServer({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${starting.port}`;
      starting.waitingFor('waiting for MongoDB at db:27017');
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ ok: false, reason: 'waiting for MongoDB at db:27017' });
      const api = await fetch(`${url}/v1/audit?url=x`);
      expect(api.status).toBe(503);
      expect(api.headers.get('retry-after')).toBe('5');
      expect(await api.json()).toEqual({
        status: 'SERVICE_UNAVAILABLE',
        message: 'the gateway is starting: waiting for MongoDB at db:27017',
        errors: [],
      });
    } finally {
      await starting.close();
    }
  });
});

describe('waitForDependency', () => {
  it('tries until the dependency answers, logging each failed attempt', async () => {
    const { logger, lines } = capturingLogger();
    let calls = 0;
    const value = await waitForDependency(
      'NATS at nats://nats:4222',
      async () => {
        if (++calls < 3) throw new StartupError('connection refused', { retryable: true });
        return 'connected';
      },
      { logger, minDelayMs: 1, maxDelayMs: 2, isFinal: isSettingsError },
    );
    expect(value).toBe('connected');
    const waits = lines.filter((line) => line['msg'] === 'waiting for NATS at nats://nats:4222');
    expect(waits.map((line) => [line['attempt'], line['reason']])).toEqual([
      [1, 'connection refused'],
      [2, 'connection refused'],
    ]);
  });

  it('stops at once on settings that waiting cannot cure', async () => {
    const { logger } = capturingLogger();
    let calls = 0;
    const refused = new StartupError('the server refused these credentials');
    await expect(
      waitForDependency(
        'NATS',
        async () => {
          calls++;
          throw refused;
        },
        { logger, minDelayMs: 1, isFinal: isSettingsError },
      ),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);
  });
});

describe('mongoHosts', () => {
  it('keeps the hosts and drops a user and password', () => {
    expect(mongoHosts('mongodb://app:s3cr%40t@db-0:27017,db-1:27017/perfwatch?replicaSet=rs0')).toBe(
      'db-0:27017,db-1:27017',
    );
    expect(mongoHosts('mongodb+srv://cluster0.example.net/')).toBe('cluster0.example.net');
  });
});
