import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLocalAgent, type PageRunner } from '@perfwatch/agent';
import { createApiClient } from '@perfwatch/client';
import { createAdmin, gatewayConfigWith, SqliteStore, startGateway } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { silentLogger } from '../support/test-services.ts';

// Issue 31: local mode's in-process bus has the fair waiting room that the NATS dispatcher has
// (test/e2e/fair-use.test.ts). One in-process agent with room for one run; user A's two async
// updates put twelve runs before it, then user B asks for one run. B's run goes next after the
// one the agent is busy with, not after A's backlog, which the agent's own line (arrival order)
// would have made it wait for.

const BUSY = 'https://busy.example/';
const OTHER = 'https://other.example/';
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-local-fair-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('local mode: the fair waiting room', () => {
  it("gives another user's run the next free place, ahead of one user's backlog", async () => {
    const runs = fixtureRunner({ delayMs: 20 });
    // A's first run is held until B's run waits too, so the order does not depend on how fast
    // this machine polls the metrics or answers B (a fixed delay did: under load B went fourth).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    const runner: PageRunner = {
      async run(request) {
        if (first) {
          first = false;
          await held;
        }
        return runs.run(request);
      },
      close: () => runs.close(),
    };
    const store = new SqliteStore({ path: join(dir, 'fair.sqlite') });
    await store.init();
    const agent = createLocalAgent({ location: 's_carolina', runner, logger: silentLogger, agentId: 'local' });
    const runtime = await startGateway({
      localAgents: [agent],
      store,
      logger: silentLogger,
      // No re-tests: one made of a suspect run would add runs to the order measured here.
      config: gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SHUTDOWN_READINESS_DELAY_MS: 0, MAX_RETESTS: 0 }),
    });
    try {
      const admin = createAdmin(store);
      const busy = await admin.createUser('busy');
      await admin.addProject('busy', BUSY, { locations: ['s_carolina'], runs: 6 });
      const other = await admin.createUser('other');
      await admin.addProject('other', OTHER, { locations: ['s_carolina'], runs: 1 });
      const busyClient = createApiClient({ server: runtime.http.url, token: busy.token });
      const backlog = [
        await busyClient.startUpdate({ url: BUSY, device: 'mobile' }),
        await busyClient.startUpdate({ url: BUSY, device: 'desktop' }),
      ];
      // All twelve of A's runs asked for the agent: one runs, eleven wait.
      await vi.waitFor(
        async () =>
          expect(await (await fetch(`${runtime.http.url}/metrics`)).text()).toContain(
            'perfwatch_queue_depth{location="s_carolina"} 11',
          ),
        { timeout: 10_000, interval: 20 },
      );

      const answer = createApiClient({ server: runtime.http.url, token: other.token }).update({
        url: OTHER,
        device: 'mobile',
      });
      await vi.waitFor(
        async () =>
          expect(await (await fetch(`${runtime.http.url}/metrics`)).text()).toContain(
            'perfwatch_queue_depth{location="s_carolina"} 12',
          ),
        { timeout: 10_000, interval: 20 },
      );
      release();
      expect((await answer).mobile!.s_carolina!.runs).toHaveLength(1);
      // A's run in progress when B asked, then B's, ahead of A's eleven.
      expect(runs.requests.map((request) => request.url).indexOf(OTHER)).toBe(1);
      expect(runs.maxConcurrent).toBe(1);
      for (const id of backlog)
        expect(await busyClient.waitForUpdate(id, { pollMs: 50, timeoutMs: 20_000 })).toMatchObject({ status: 'done' });
      expect(runs.requests).toHaveLength(13);
    } finally {
      await runtime.stop();
      await agent.stop();
      await store.close();
    }
  });
});
