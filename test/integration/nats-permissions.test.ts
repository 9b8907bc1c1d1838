import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createUser } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  agentAnnounceSubject,
  artifactPullSubject,
  artifactPushSubject,
  connectNats,
  encodeAnnouncement,
  encodeJob,
  decodeReply,
  HEADERS,
} from '@perfwatch/common';
import {
  createAdmin,
  gatewayConfigWith,
  startAgentRegistry,
  startGateway,
  type AgentRegistry,
} from '@perfwatch/gateway';
import { startNatsServer, type LocalServer } from '../support/local-servers.ts';
import { inject } from 'vitest';
import { runPerfwatch, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { silentLogger, testStore } from '../support/test-services.ts';
import { writeSelfSignedCert } from '../support/tls.ts';

// A nats-server that requires TLS and nkey authentication, with the roles of
// deploy/nats/roles/: an agent with its own credentials works over TLS; one with
// credentials the server does not know fails at start, saying so; an agent's credentials do
// not reach another location's jobs or announcements.

const rolesDir = join(dirname(fileURLToPath(import.meta.url)), '../../deploy/nats/roles');
let dir: string;
let server: LocalServer;
let gateway: NatsConnection;
let registry: AgentRegistry;
let agent: PerfwatchProcess | undefined;
const files = { ca: '', gatewaySeed: '', tokyoSeed: '', strangerSeed: '' };

async function seedFile(name: string): Promise<{ file: string; publicKey: string }> {
  const user = createUser();
  const file = join(dir, `${name}.nk`);
  await writeFile(file, new TextDecoder().decode(user.getSeed()), { mode: 0o600 });
  return { file, publicKey: user.getPublicKey() };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-nats-auth-'));
  const tls = await writeSelfSignedCert(dir);
  files.ca = tls.cert;
  const gatewayUser = await seedFile('gateway');
  const tokyoUser = await seedFile('agent-tokyo');
  files.gatewaySeed = gatewayUser.file;
  files.tokyoSeed = tokyoUser.file;
  files.strangerSeed = (await seedFile('stranger')).file;
  // The shipped roles, unchanged, beside a config that names this test's users and certificate.
  await cp(rolesDir, join(dir, 'server', 'roles'), { recursive: true });
  const config = [
    `tls { cert_file: "${tls.cert}", key_file: "${tls.key}" }`,
    'authorization { users = [',
    `  { nkey: "${gatewayUser.publicKey}", permissions: { include "roles/gateway.conf" } }`,
    `  { nkey: "${tokyoUser.publicKey}", permissions: { include "roles/agent-tokyo.conf" } }`,
    '] }',
    '',
  ].join('\n');
  server = await startNatsServer({ binary: inject('natsServerBinary'), dir: join(dir, 'server'), config });
  gateway = await connectNats(
    { NATS_URL: server.url, NATS_NKEY_SEED_FILE: files.gatewaySeed, NATS_TLS_CA_FILE: files.ca },
    { name: 'test-gateway', maxReconnectAttempts: 0 },
  );
  registry = await startAgentRegistry({ nc: gateway, logger: silentLogger });
});

afterAll(async () => {
  await agent?.stop();
  await registry?.stop();
  await gateway?.drain();
  await server?.stop();
  if (!process.env['KEEP_NATS_DIR']) await rm(dir, { recursive: true, force: true });
});

const agentEnv = (seed: string) => ({
  NATS_URL: server.url,
  NATS_NKEY_SEED_FILE: seed,
  NATS_TLS_CA_FILE: files.ca,
  PERFWATCH_LOCATION: 'tokyo',
  PERFWATCH_AGENT_ID: 'tokyo-tls',
  PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
});

describe('NATS with TLS and per-role permissions', () => {
  it('an agent with its own credentials connects over TLS, announces itself and makes a run', async () => {
    agent = spawnPerfwatch(['agent'], agentEnv(files.tokyoSeed));
    await agent.waitFor(/agent serving location/);
    await vi.waitFor(() => expect(registry.agents('tokyo')?.map((a) => a.agentId)).toEqual(['tokyo-tls']), {
      timeout: 10_000,
    });
    const job = {
      jobId: 'tls-1',
      updateId: 'tls',
      url: `${inject('siteUrl')}index.html`,
      device: 'desktop' as const,
      location: 'tokyo' as const,
      runIndex: 0,
      timeoutMs: 120_000,
    };
    const msg = await gateway.request('perfwatch.audit.v1.tokyo', encodeJob(job), { timeout: 150_000 });
    const reply = await decodeReply(msg.data, msg.headers?.get(HEADERS.contentEncoding));
    expect(reply.ok, JSON.stringify(reply).slice(0, 300)).toBe(true);
  }, 180_000);

  it('the gateway role runs the durable update queue: an async update goes through JetStream to done', async () => {
    const store = await testStore();
    const runtime = await startGateway({
      nc: gateway,
      store,
      logger: silentLogger,
      config: gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SHUTDOWN_READINESS_DELAY_MS: 0 }),
    });
    try {
      const admin = createAdmin(store);
      const { token } = await admin.createUser('queue-user');
      const page = `${inject('siteUrl')}index.html`;
      await admin.addProject('queue-user', page, { locations: ['tokyo'], runs: 1 });
      const accepted = await fetch(`${runtime.http.url}/v1/update`, {
        method: 'POST',
        headers: { Authorization: token, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: page, device: 'desktop', mode: 'async' }),
      });
      expect(accepted.status, await accepted.clone().text()).toBe(200);
      const { id } = (await accepted.json()) as { id: string };
      await vi.waitFor(
        async () => {
          const state = (await (
            await fetch(`${runtime.http.url}/v1/updates/${id}`, { headers: { Authorization: token } })
          ).json()) as { status: string; reason: string | null };
          expect(state.status, state.reason ?? '').toBe('done');
        },
        { timeout: 120_000, interval: 500 },
      );
    } finally {
      await runtime.stop();
      await store.close();
    }
  }, 180_000);

  it('an agent with credentials the server does not know fails at start, saying what to check', async () => {
    const { code, output } = await runPerfwatch(['agent'], agentEnv(files.strangerSeed));
    expect(code).toBe(1);
    expect(output).toMatch(/could not connect to NATS at .*(refused these credentials|NATS_NKEY_SEED_FILE)/);
    expect(output).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });

  it('an agent without TLS trust for the server fails at start, saying so', async () => {
    const { NATS_TLS_CA_FILE: _untrusted, ...env } = agentEnv(files.tokyoSeed);
    const { code, output } = await runPerfwatch(['agent'], env);
    expect(code).toBe(1);
    expect(output).toMatch(
      /could not connect to NATS at .*(self.signed|certificate).*TLS failed: check NATS_TLS_CA_FILE/,
    );
  });

  it('the tokyo credentials take tokyo jobs only inside the queue group', async () => {
    const tokyo = await connectNats(
      { NATS_URL: server.url, NATS_NKEY_SEED_FILE: files.tokyoSeed, NATS_TLS_CA_FILE: files.ca },
      { name: 'stolen-tokyo-spy', maxReconnectAttempts: 0 },
    );
    try {
      // Outside the group a subscriber would see every job of the location and could answer first.
      const spy = tokyo.subscribe('perfwatch.audit.v1.tokyo');
      expect(String(await spy.closed)).toMatch(/permissions violation/i);
      const wildcard = tokyo.subscribe('perfwatch.audit.v1.>', { queue: 'perfwatch-agents.tokyo' });
      expect(String(await wildcard.closed)).toMatch(/permissions violation/i);
    } finally {
      await tokyo.close();
    }
  });

  it('the tokyo credentials cannot take london jobs, nor announce or answer for london', async () => {
    const tokyo = await connectNats(
      { NATS_URL: server.url, NATS_NKEY_SEED_FILE: files.tokyoSeed, NATS_TLS_CA_FILE: files.ca },
      { name: 'stolen-tokyo', maxReconnectAttempts: 0 },
    );
    const errors: string[] = [];
    void (async () => {
      for await (const status of tokyo.status()) if (status.type === 'error') errors.push(String(status.error));
    })();
    try {
      const london = tokyo.subscribe('perfwatch.audit.v1.london', { queue: 'perfwatch-agents.london' });
      const closed = await london.closed;
      expect(String(closed)).toMatch(/permissions violation/i);
      tokyo.publish(
        agentAnnounceSubject('london'),
        encodeAnnouncement({
          agentId: 'impostor',
          location: 'london',
          version: '1',
          capacity: 1,
          busy: 0,
          state: 'ready',
          intervalMs: 60_000,
        }),
      );
      await tokyo.flush();
      await vi.waitFor(() => expect(errors.join(' ')).toMatch(/permissions violation for publish/i));
      // Nothing reached the gateway: london has no agent, and a london job finds no responder.
      expect(registry.agents('london')).toEqual([]);
      await expect(
        gateway.request(
          'perfwatch.audit.v1.london',
          encodeJob({
            jobId: 'x',
            updateId: 'x',
            url: 'https://example.com/',
            device: 'mobile',
            location: 'london',
            runIndex: 0,
            timeoutMs: 1000,
          }),
          { timeout: 2_000 },
        ),
      ).rejects.toThrow(/no responders/i);
    } finally {
      await tokyo.close();
    }
  });

  it("the tokyo credentials send artifact chunks on tokyo's push subjects only, and take pulls only in the queue group", async () => {
    const tokyo = await connectNats(
      { NATS_URL: server.url, NATS_NKEY_SEED_FILE: files.tokyoSeed, NATS_TLS_CA_FILE: files.ca },
      { name: 'stolen-tokyo-artifacts', maxReconnectAttempts: 0 },
    );
    const errors: string[] = [];
    void (async () => {
      for await (const status of tokyo.status()) if (status.type === 'error') errors.push(String(status.error));
    })();
    const token = 'B'.repeat(32);
    const received: string[] = [];
    const gatewaySide = gateway.subscribe('perfwatch.artifacts.v1.*.push.*', {
      callback: (_error, msg) => void received.push(msg.subject),
    });
    await gateway.flush();
    try {
      tokyo.publish(artifactPushSubject('london', token), new Uint8Array(10));
      tokyo.publish(artifactPushSubject('tokyo', token), new Uint8Array(10));
      await tokyo.flush();
      await vi.waitFor(() => expect(received).toEqual([artifactPushSubject('tokyo', token)]));
      await vi.waitFor(() =>
        expect(errors.join(' ')).toMatch(/permissions violation for publish to "perfwatch\.artifacts\.v1\.london/i),
      );
      const outside = tokyo.subscribe(artifactPullSubject('tokyo', 'tokyo-tls'));
      expect(String(await outside.closed)).toMatch(/permissions violation/i);
      const london = tokyo.subscribe(artifactPullSubject('london', 'x'), { queue: 'perfwatch-agents.london' });
      expect(String(await london.closed)).toMatch(/permissions violation/i);
    } finally {
      gatewaySide.unsubscribe();
      await tokyo.close();
    }
  });
});
