import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalAgent, RunFailure } from '@perfwatch/agent';
import { createApiClient } from '@perfwatch/client';
import { createAdmin, gatewayConfigWith, SqliteStore, startGateway, type GatewayRuntime } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { silentLogger } from '../support/test-services.ts';

// The gateway of `perfwatch start` without NATS: an in-process agent (answering with captured
// Lighthouse results), the in-process update queue, the embedded SQLite store on a real file.

let dir: string;
const SITE = 'https://local.example/';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-local-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function start(path: string, runner = fixtureRunner({ delayMs: 20 })) {
  const store = new SqliteStore({ path });
  await store.init();
  const agent = createLocalAgent({ location: 's_carolina', runner, logger: silentLogger, agentId: 'local' });
  const runtime: GatewayRuntime = await startGateway({
    localAgents: [agent],
    store,
    logger: silentLogger,
    config: gatewayConfigWith({
      PORT: 0,
      HOST: '127.0.0.1',
      SHUTDOWN_READINESS_DELAY_MS: 0,
      UPDATE_WORKERS: 1,
      UPDATE_RETRY_DELAY_MS: 200,
    }),
  });
  return {
    store,
    runtime,
    runner,
    url: runtime.http.url,
    async stop() {
      await runtime.stop();
      await agent.stop();
      await store.close();
    },
  };
}

describe('local mode: in-process bus and embedded store', () => {
  it('runs sync and async updates, reports a location without an agent as 503, and serves metrics without NATS', async () => {
    const gateway = await start(join(dir, 'a.sqlite'));
    try {
      const admin = createAdmin(gateway.store);
      const { token } = await admin.createUser('lou');
      await admin.addProject('lou', SITE, { locations: ['s_carolina'], runs: 2 });
      await admin.addProject('lou', 'https://far.example/', { locations: ['tokyo'], runs: 1 });
      const client = createApiClient({ server: gateway.url, token });

      const sync = await client.update({ url: SITE, device: 'mobile' });
      expect(sync.mobile!.s_carolina!.runs.map((r) => r.agentId)).toEqual(['local', 'local']);
      const id = await client.startUpdate({ url: SITE, device: 'desktop' });
      const done = await client.waitForUpdate(id, { pollMs: 50, timeoutMs: 10_000 });
      expect(done).toMatchObject({
        status: 'done',
        attempts: 1,
        progress: [{ device: 'desktop', location: 's_carolina', done: 2, total: 2 }],
      });
      expect((await client.audit({ url: SITE, date: done.date! })).desktop!.s_carolina!.median).toBeGreaterThan(0);

      const far = await client.update({ url: 'https://far.example/' }).catch((error: unknown) => error);
      expect(far).toMatchObject({ httpStatus: 503, envelope: { status: 'SERVICE_UNAVAILABLE' } });

      expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(metrics).toContain('perfwatch_agents{location="s_carolina"} 1');
      expect(metrics).not.toContain('perfwatch_nats_connected');
    } finally {
      await gateway.stop();
    }
  });

  it('keeps accepted async updates across a stop: the next start takes up the queued ones, each stored once', async () => {
    const path = join(dir, 'b.sqlite');
    const first = await start(path, fixtureRunner({ delayMs: 700 }));
    const admin = createAdmin(first.store);
    const { token } = await admin.createUser('max');
    await admin.addProject('max', SITE, { locations: ['s_carolina'], runs: 1 });
    const ids = [];
    for (let i = 0; i < 4; i += 1)
      ids.push(await createApiClient({ server: first.url, token }).startUpdate({ url: SITE, device: 'mobile' }));
    // Stopped while the first update runs: it is finished, the other three stay queued.
    await first.stop();
    const left = new SqliteStore({ path });
    await left.init();
    const states = await Promise.all(
      ids.map(async (id) => (await left.findUpdate((await left.findUserByName('max'))!.id, id))!.status),
    );
    await left.close();
    expect(states.filter((s) => s === 'queued').length).toBeGreaterThanOrEqual(2);

    const second = await start(path);
    try {
      const client = createApiClient({ server: second.url, token });
      for (const id of ids)
        expect(await client.waitForUpdate(id, { pollMs: 50, timeoutMs: 20_000 })).toMatchObject({ status: 'done' });
      expect((await client.updates(SITE)).mobile).toHaveLength(4);
    } finally {
      await second.stop();
    }
  });

  /** A gateway on a file of its own, with one user owning SITE, and that user's client. */
  async function withProject(file: string, runner: ReturnType<typeof fixtureRunner>) {
    const gateway = await start(join(dir, file), runner);
    const admin = createAdmin(gateway.store);
    const { token } = await admin.createUser('user');
    await admin.addProject('user', SITE, { locations: ['s_carolina'], runs: 1 });
    return { gateway, client: createApiClient({ server: gateway.url, token }) };
  }

  it("delivers an update again after a failure that may pass, and fails one for good on the page's own error", async () => {
    // Both tries of the run fail (the update service offers a failed run once more): the delivery fails, the next one succeeds.
    let calls = 0;
    const flaky = await withProject(
      'c.sqlite',
      fixtureRunner({
        delayMs: 10,
        fail: () => (calls++ < 2 ? new RunFailure('INTERNAL', 'Chrome crashed', true) : null),
      }),
    );
    try {
      const retried = await flaky.client.waitForUpdate(
        await flaky.client.startUpdate({ url: SITE, device: 'mobile' }),
        { pollMs: 50, timeoutMs: 10_000 },
      );
      expect(retried).toMatchObject({ status: 'done', attempts: 2 });
    } finally {
      await flaky.gateway.stop();
    }
    const broken = await withProject(
      'd.sqlite',
      fixtureRunner({ fail: () => new RunFailure('PAGE_LOAD_FAILED', 'ERRORED_DOCUMENT_REQUEST: status 500', false) }),
    );
    try {
      const failed = await broken.client.waitForUpdate(
        await broken.client.startUpdate({ url: SITE, device: 'mobile' }),
        { pollMs: 50, timeoutMs: 10_000 },
      );
      expect(failed).toMatchObject({ status: 'failed', attempts: 1 });
      expect(failed.reason).toMatch(/ERRORED_DOCUMENT_REQUEST/);
    } finally {
      await broken.gateway.stop();
    }
  });
});
