import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditResultSchema } from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createAdmin, SqliteStore } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { spawnGateway } from '../support/perfwatch-process.ts';
import { isolatedNats, silentLogger } from '../support/test-services.ts';

// `perfwatch gateway` with PERFWATCH_DATA_DIR: a fleet over a real nats-server served by one
// gateway that keeps its store in a file, and finds it again after a restart.

const URL_ = 'https://embedded-gateway.example/';
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let dir: string;
let agentConn: NatsConnection;
let agent: Agent;
let token: string;

beforeAll(async () => {
  nats = await isolatedNats();
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-embedded-gateway-'));
  const store = new SqliteStore({ path: join(dir, 'perfwatch.sqlite') });
  await store.init();
  const admin = createAdmin(store);
  ({ token } = await admin.createUser('embedded'));
  await admin.addProject('embedded', URL_, { locations: ['london'], runs: 1 });
  await store.close();
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner(),
    logger: silentLogger,
    agentId: 'london-stub',
    announceIntervalMs: 1_000,
  });
});

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('gateway on the embedded store', () => {
  it('stores a sync update in PERFWATCH_DATA_DIR and serves it again after a restart', async () => {
    const env = { NATS_URL: nats.url, PERFWATCH_DATA_DIR: dir, MONGODB_URI: 'mongodb://127.0.0.1:1/' };
    const first = await spawnGateway(env);
    const get = (base: string, path: string) => fetch(`${base}${path}`, { headers: { Authorization: token } });
    let body: unknown;
    try {
      // The agent's announcement reaches the gateway's registry within its interval.
      for (let i = 0; ; i++) {
        const res = await get(first.url, `/v1/update?url=${encodeURIComponent(URL_)}&device=mobile`);
        body = await res.json();
        if (res.status === 200 || i > 20) {
          expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(200);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(first.process.output()).toMatch(/embedded store: run one gateway replica only/);
    } finally {
      await first.process.stop('SIGTERM');
    }
    const date = auditResultSchema.parse(body).mobile!.london!.lighthouse.date;

    // The MongoDB URI above leads nowhere: what the second gateway serves comes from the file.
    const second = await spawnGateway(env);
    try {
      const audit = await get(second.url, `/v1/audit?url=${encodeURIComponent(URL_)}&date=${date}`);
      expect(audit.status).toBe(200);
      expect(await audit.json()).toEqual(body);
    } finally {
      await second.process.stop('SIGTERM');
    }
  }, 60_000);
});
