import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { freePort, startFerretDb, startNatsServer, type LocalServer } from '../support/local-servers.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';

// A gateway started before its database and NATS (a cold `docker compose up`, a rescheduled
// pod): it waits for each, saying so, live but not ready meanwhile, and serves once they are up
// without being restarted.

/**
 * A free port below Linux's ephemeral range (32768–60999). The database and NATS start seconds
 * after the gateway first tries them; a port from the ephemeral range (what `freePort` gives)
 * can meanwhile become another connection's local port, and the gateway then talks to that.
 */
async function reservedPort(): Promise<number> {
  for (;;) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(candidate, '127.0.0.1', () => resolve(true));
    });
    if (bound) {
      await new Promise((resolve) => server.close(resolve));
      return candidate;
    }
  }
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('gateway start order', () => {
  it('waits for MongoDB and then NATS, unready meanwhile, and serves once both answer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-start-order-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const [mongoPort, natsPort, port] = [await reservedPort(), await reservedPort(), await freePort()];
    const gateway: PerfwatchProcess = spawnPerfwatch(['gateway'], {
      PORT: String(port),
      HOST: '127.0.0.1',
      MONGODB_URI: `mongodb://127.0.0.1:${mongoPort}/`,
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
      SHUTDOWN_READINESS_DELAY_MS: '0',
    });
    cleanups.push(() => gateway.stop('SIGKILL'));
    const url = `http://127.0.0.1:${port}`;

    await gateway.waitFor(/"attempt":2,.*"msg":"waiting for MongoDB at 127\.0\.0\.1:\d+"/, 60_000);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const unready = await fetch(`${url}/readyz`);
    expect(unready.status).toBe(503);
    expect(await unready.json()).toMatchObject({ reason: `waiting for MongoDB at 127.0.0.1:${mongoPort}` });
    expect((await fetch(`${url}/v1/projects`)).status).toBe(503);

    const mongo: LocalServer = await startFerretDb({
      binary: inject('ferretDbBinary'),
      dir: join(dir, 'ferretdb'),
      port: mongoPort,
    });
    cleanups.push(() => mongo.stop());
    await gateway.waitFor(/"msg":"waiting for NATS at nats:\/\/127\.0\.0\.1:\d+"/, 60_000);
    await vi.waitFor(
      async () =>
        expect(await (await fetch(`${url}/readyz`)).json()).toMatchObject({
          reason: `waiting for NATS at nats://127.0.0.1:${natsPort}`,
        }),
      { timeout: 10_000 },
    );

    const nats: LocalServer = await startNatsServer({
      binary: inject('natsServerBinary'),
      dir: join(dir, 'nats'),
      port: natsPort,
    });
    cleanups.push(() => nats.stop());
    await vi.waitFor(async () => expect((await fetch(`${url}/readyz`)).status).toBe(200), {
      timeout: 60_000,
      interval: 250,
    });
    expect((await fetch(`${url}/v1/projects`)).status).toBe(400);
    // Each wait was a log line, never a driver's stack.
    expect(gateway.output()).not.toMatch(/\n\s+at /);

    gateway.child.kill('SIGTERM');
    expect(gateway.child.exitCode ?? (await once(gateway.child, 'exit'))[0]).toBe(0);
  }, 180_000);

  it('stops at once, saying what to fix, when NATS refuses its credentials', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-start-order-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const mongo = await startFerretDb({ binary: inject('ferretDbBinary'), dir: join(dir, 'ferretdb') });
    cleanups.push(() => mongo.stop());
    const nats = await startNatsServer({
      binary: inject('natsServerBinary'),
      dir: join(dir, 'nats'),
      config: 'authorization { user: someone, password: other }\n',
    });
    cleanups.push(() => nats.stop());
    const gateway = spawnPerfwatch(['gateway'], {
      PORT: '0',
      HOST: '127.0.0.1',
      MONGODB_URI: mongo.url,
      NATS_URL: nats.url.replace('nats://', 'nats://wrong:guess@'),
    });
    cleanups.push(() => gateway.stop('SIGKILL'));
    const code = gateway.child.exitCode ?? (await once(gateway.child, 'exit'))[0];
    expect(code).toBe(1);
    expect(gateway.output()).toMatch(
      /perfwatch gateway: could not connect to NATS at .*the server refused these credentials/,
    );
    expect(gateway.output()).not.toContain('guess');
  }, 60_000);

  it('stops on SIGTERM when its NATS has gone away, instead of reconnecting for ever', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-start-order-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const nats = await startNatsServer({ binary: inject('natsServerBinary'), dir: join(dir, 'nats') });
    cleanups.push(() => nats.stop());
    const gateway = spawnPerfwatch(['gateway'], {
      PORT: '0',
      HOST: '127.0.0.1',
      PERFWATCH_DATA_DIR: join(dir, 'data'),
      NATS_URL: nats.url,
      SHUTDOWN_READINESS_DELAY_MS: '0',
    });
    cleanups.push(() => gateway.stop('SIGKILL'));
    await gateway.waitFor(/gateway listening/, 60_000);
    await nats.stop();
    await gateway.waitFor(/NATS connection lost/, 30_000);
    gateway.child.kill('SIGTERM');
    // Its own shutdown deadline (SHUTDOWN_TIMEOUT_MS, 30 s) would exit 1; a clean stop exits 0.
    // Before, the drain failed, the connection went on reconnecting, and the process never ended.
    const code = gateway.child.exitCode ?? (await once(gateway.child, 'exit'))[0];
    expect(code, gateway.output().slice(-2000)).toBe(0);
  }, 120_000);
});
