import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection, type Subscription } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import {
  ARTIFACT_HEADERS,
  artifactAckSchema,
  artifactAckSubject,
  artifactPullAnswerSchema,
  artifactPullSubject,
  artifactPushSubject,
  decodeArtifactMessage,
  encodeArtifactMessage,
  agentAnnounceSubject,
  auditResultSchema,
  auditSubject,
  LOCATIONS,
  connectNats,
  encodeAnnouncement,
  encodeJob,
} from '@perfwatch/common';
import { createAdmin, MongoStore, startAgentRegistry, tickUpdateId, type AgentRegistry } from '@perfwatch/gateway';
import { freePort, startNatsServer, type LocalServer } from '../support/local-servers.ts';
import { spawnGateway, spawnNode, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { silentLogger } from '../support/test-services.ts';
import { writeSelfSignedCert } from '../support/tls.ts';

// NATS as shipped: the hub runs deploy/nats/nats-server.conf and tokyo's region runs
// deploy/nats/leafnode-region.conf, both unchanged, with the keys `npm run nats-credentials`
// writes and a certificate of the test's own. Two gateways on the hub, an agent on the leaf,
// TLS on every hop to the hub: sync, async and scheduled updates reach the agent. Then the
// region's own credentials, in a leaf server its operator configures at will, try what a
// hostile region would: other locations' jobs, gateways' inboxes, the JetStream API,
// announcing for another location.

const shipped = join(dirname(fileURLToPath(import.meta.url)), '../../deploy/nats');
/** The hub's leaf-node port is the one the shipped configuration names. */
const HUB_LEAF_PORT = 7422;

let dir: string;
let keys: string;
let cert: string;
let hub: LocalServer;
let leaf: LocalServer;
let rogueLeaf: LocalServer;
let observer: NatsConnection;
let registry: AgentRegistry;
let rogue: NatsConnection;
let spies: Subscription[];
const spied: string[] = [];
let store: MongoStore;
let token: string;
const gateways: Array<{ process: PerfwatchProcess; url: string }> = [];
let agent: PerfwatchProcess;
const db = { MONGODB_URI: '', MONGODB_DB: `pwleaf_${randomUUID().slice(0, 8)}` };
const page = () => `${inject('siteUrl')}index.html`;

function parseEnv(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-leaf-'));
  keys = join(dir, 'keys');
  const generated = spawnNode(['scripts/nats-credentials.ts', keys], {});
  expect(await new Promise((resolve) => generated.child.once('exit', resolve)), generated.output()).toBe(0);
  const hubEnv = parseEnv(await readFile(join(keys, 'hub.env'), 'utf8'));
  const leafSeed = (await readFile(join(keys, 'leaf-tokyo.nk'), 'utf8')).trim();
  ({ cert } = await writeSelfSignedCert(dir));
  const key = join(dir, 'server.key');
  for (const side of ['hub', 'leaf']) await cp(shipped, join(dir, side), { recursive: true });

  hub = await startNatsServer({
    binary: inject('natsServerBinary'),
    dir: join(dir, 'hub'),
    configFile: join(dir, 'hub/nats-server.conf'),
    env: { ...hubEnv, NATS_TLS_CERT_FILE: cert, NATS_TLS_KEY_FILE: key, NATS_STORE_DIR: join(dir, 'hub/jetstream') },
    jetstream: 'as-configured',
  });
  const hubLeafUrl = `tls://127.0.0.1:${HUB_LEAF_PORT}`;
  leaf = await startNatsServer({
    binary: inject('natsServerBinary'),
    dir: join(dir, 'leaf'),
    configFile: join(dir, 'leaf/leafnode-region.conf'),
    env: {
      PERFWATCH_AGENT_NKEY: hubEnv['PERFWATCH_AGENT_TOKYO_NKEY']!,
      PERFWATCH_HUB_LEAF_URL: hubLeafUrl,
      PERFWATCH_LEAF_SEED: leafSeed,
      NATS_TLS_CA_FILE: cert,
    },
    jetstream: 'as-configured',
  });
  // The same region credentials in a leaf server whose operator lets every local client do anything.
  rogueLeaf = await startNatsServer({
    binary: inject('natsServerBinary'),
    dir: join(dir, 'rogue'),
    config: `leafnodes { remotes = [ { url: "${hubLeafUrl}", nkey: "${leafSeed}", tls { ca_file: "${cert}" } } ] }\n`,
    jetstream: 'as-configured',
  });
  rogue = await connect({ servers: rogueLeaf.url, name: 'rogue-region' });
  // Everything the region must never see, and the gateways' discover requests, which it does see
  // (the control that the spy is live). Not tokyo's own jobs: a plain subscriber there takes a
  // copy of every tokyo job, so a job sent while the agent is busy would find that subscriber,
  // not "no responders", and wait for its timeout: the region can stall its own location only.
  const watched = [
    '_INBOX.>',
    '$JS.>',
    'perfwatch.updates.>',
    'perfwatch.agents.v1.discover',
    ...LOCATIONS.filter((l) => l !== 'tokyo').flatMap((l) => [auditSubject(l), agentAnnounceSubject(l)]),
  ];
  spies = watched.map((subject) =>
    rogue.subscribe(subject, { callback: (_error, msg) => void spied.push(msg.subject) }),
  );
  await rogue.flush();

  const tlsTo = (seed: string) => ({
    NATS_URL: hub.url,
    NATS_NKEY_SEED_FILE: join(keys, seed),
    NATS_TLS_CA_FILE: cert,
  });
  observer = await connectNats(tlsTo('gateway.nk'), { name: 'test-observer', maxReconnectAttempts: 0 });
  registry = await startAgentRegistry({ nc: observer, logger: silentLogger });

  db.MONGODB_URI = inject('mongoUri');
  store = new MongoStore({ uri: db.MONGODB_URI, dbName: db.MONGODB_DB });
  await store.init();
  const admin = createAdmin(store);
  ({ token } = await admin.createUser('leaf-user'));
  await admin.addProject('leaf-user', page(), { locations: ['tokyo'], runs: 1 });

  agent = spawnPerfwatch(['agent'], {
    NATS_URL: leaf.url,
    NATS_NKEY_SEED_FILE: join(keys, 'agent-tokyo.nk'),
    PERFWATCH_LOCATION: 'tokyo',
    PERFWATCH_AGENT_ID: 'tokyo-leaf',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  gateways.push(
    ...(await Promise.all(
      [0, 1].map(() => spawnGateway({ ...db, ...tlsTo('gateway.nk'), SCHEDULER_INTERVAL_MS: '500' })),
    )),
  );
  await agent.waitFor(/agent serving location/);
  await vi.waitFor(() => expect(registry.agents('tokyo')?.map((a) => a.agentId)).toEqual(['tokyo-leaf']), {
    timeout: 15_000,
  });
}, 90_000);

afterAll(async () => {
  await agent?.stop();
  for (const gateway of gateways) await gateway.process.stop();
  await registry?.stop();
  await observer?.drain();
  await rogue?.close();
  await store?.close();
  for (const server of [rogueLeaf, leaf, hub]) await server?.stop();
  if (!process.env['KEEP_NATS_DIR']) await rm(dir, { recursive: true, force: true });
});

const auth = () => ({ Authorization: token, 'Content-Type': 'application/json' });

async function waitDone(gateway: string, id: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const state = (await (await fetch(`${gateway}/v1/updates/${id}`, { headers: auth() })).json()) as {
        status: string;
        reason: string | null;
      };
      expect(state.status, state.reason ?? '').toBe('done');
    },
    { timeout: 120_000, interval: 500 },
  );
}

describe('hub and region leaf node from the shipped NATS configuration', () => {
  it('a sync update on one gateway is measured by the agent behind the leaf node', async () => {
    const res = await fetch(`${gateways[0]!.url}/v1/update`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ url: page(), device: 'desktop' }),
    });
    const body = await res.json();
    expect(res.status, JSON.stringify(body).slice(0, 500)).toBe(200);
    const cell = auditResultSchema.parse(body).desktop!.tokyo!;
    // One run (and a re-test should the gateway have doubted it).
    expect(cell.runs.filter((r) => r.retestOf === undefined)).toHaveLength(1);
    expect((cell.lighthouse as { finalDisplayedUrl?: string }).finalDisplayedUrl).toBe(page());
  }, 150_000);

  it("an async update on the other gateway goes through the hub's JetStream queue to done", async () => {
    const res = await fetch(`${gateways[1]!.url}/v1/update`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ url: page(), device: 'desktop', mode: 'async' }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    await waitDone(gateways[1]!.url, ((await res.json()) as { id: string }).id);
  }, 150_000);

  it('a scheduled update runs to done', async () => {
    const scheduled = `${inject('siteUrl')}index.html?scheduled`;
    // Once a minute, a few seconds from now: one tick to watch, and no second one before the
    // project is removed (a tick every few seconds would queue runs behind this one).
    const second = (new Date().getUTCSeconds() + 4) % 60;
    const project = await createAdmin(store).addProject('leaf-user', scheduled, {
      locations: ['tokyo'],
      runs: 1,
      schedule: `${second} * * * * *`,
    });
    const user = (await store.findUserByName('leaf-user'))!;
    const first = await vi.waitFor(
      async () => {
        const tick = (await store.listScheduledProjects()).find((p) => p.id === project.id)?.scheduledThrough;
        expect(tick, 'no tick scheduled yet').toBeTruthy();
        return tick!;
      },
      { timeout: 30_000, interval: 500 },
    );
    // Removed only once its update has ended: an update whose project is gone fails by design.
    try {
      await vi.waitFor(
        async () => {
          const update = await store.findUpdate(user.id, tickUpdateId(project.id, first));
          expect(update?.updateType).toBe('scheduled');
          expect(
            update?.status,
            `${update?.reason ?? ''}\n${[...gateways.map((g) => g.process), agent].map((p) => p.output().slice(-3000)).join('\n')}`,
          ).toBe('done');
        },
        { timeout: 150_000, interval: 1_000 },
      );
    } finally {
      await createAdmin(store).removeProject('leaf-user', scheduled);
    }
  }, 180_000);
});

describe("what a region's credentials reach", () => {
  it("never sees another location's jobs or announcements, a gateway's inbox, JetStream or the update queue", () => {
    // Subscribed since before the gateways started: their discover requests arrived.
    expect(spied).toContain('perfwatch.agents.v1.discover');
    expect(spied.filter((subject) => subject !== 'perfwatch.agents.v1.discover')).toEqual([]);
    expect(spies.every((spy) => !spy.isClosed())).toBe(true);
  });

  it("cannot take another location's jobs: a london job finds no responder though the region subscribes", async () => {
    const london = rogue.subscribe('perfwatch.audit.v1.london', { queue: 'perfwatch-agents.london' });
    await rogue.flush();
    const job = encodeJob({
      jobId: 'x',
      updateId: 'x',
      url: 'https://example.com/',
      device: 'mobile',
      location: 'london',
      runIndex: 0,
      timeoutMs: 1000,
    });
    await expect(observer.request('perfwatch.audit.v1.london', job, { timeout: 2_000 })).rejects.toThrow(
      /no responders/i,
    );
    expect(london.getProcessed()).toBe(0);
    london.unsubscribe();
  });

  it('cannot call the JetStream API: deleting the update stream gets no answer and the stream stays', async () => {
    const jsm = await jetstreamManager(observer);
    expect((await jsm.streams.info('PERFWATCH_UPDATES')).config.name).toBe('PERFWATCH_UPDATES');
    await expect(rogue.request('$JS.API.STREAM.DELETE.PERFWATCH_UPDATES', '', { timeout: 1_500 })).rejects.toThrow(
      /no responders|timeout/i,
    );
    await expect(rogue.request('$JS.API.INFO', '', { timeout: 1_500 })).rejects.toThrow(/no responders|timeout/i);
    expect((await jsm.streams.info('PERFWATCH_UPDATES')).config.name).toBe('PERFWATCH_UPDATES');
  });

  it('cannot announce for another location, nor queue an update', async () => {
    const jsm = await jetstreamManager(observer);
    const queueBefore = (await jsm.streams.info('PERFWATCH_UPDATES')).state.last_seq;
    rogue.publish(
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
    rogue.publish('perfwatch.updates.v1.run', '{}');
    rogue.publish('perfwatch.updates.v1.run.forged', '{}');
    // Something the hub does pass, published after: once it arrives, the forgeries would have too.
    rogue.publish(
      agentAnnounceSubject('tokyo'),
      encodeAnnouncement({
        agentId: 'rogue-tokyo',
        location: 'tokyo',
        version: '1',
        capacity: 1,
        busy: 0,
        state: 'ready',
        intervalMs: 60_000,
      }),
    );
    await rogue.flush();
    await vi.waitFor(() => expect(registry.agents('tokyo')?.map((a) => a.agentId)).toContain('rogue-tokyo'), {
      timeout: 5_000,
    });
    expect(registry.agents('london')).toEqual([]);
    expect((await jsm.streams.info('PERFWATCH_UPDATES')).state.last_seq).toBe(queueBefore);
  });

  it("the agent credentials on the region's server take jobs only inside the queue group", async () => {
    const tokyo = await connectNats(
      { NATS_URL: leaf.url, NATS_NKEY_SEED_FILE: join(keys, 'agent-tokyo.nk') },
      { name: 'stolen-tokyo-agent', maxReconnectAttempts: 0 },
    );
    try {
      expect(String(await tokyo.subscribe('perfwatch.audit.v1.tokyo').closed)).toMatch(/permissions violation/i);
      expect(
        String(await tokyo.subscribe('perfwatch.audit.v1.london', { queue: 'perfwatch-agents.london' }).closed),
      ).toMatch(/permissions violation/i);
    } finally {
      await tokyo.close();
    }
  });

  it("artifacts cross the hub: a gateway's pull reaches the agent behind the leaf, whose chunks go on tokyo's push subjects only", async () => {
    const pull = (token: string) =>
      encodeArtifactMessage({ v: 1, jobId: 'not-run', agentId: 'tokyo-leaf', kind: 'requests', token });
    const token = 'A'.repeat(32);
    const answer = await vi.waitFor(
      () => observer.request(artifactPullSubject('tokyo', 'tokyo-leaf'), pull(token), { timeout: 2_000 }),
      { timeout: 15_000 },
    );
    expect(decodeArtifactMessage(artifactPullAnswerSchema, answer.data)).toMatchObject({
      ok: false,
      code: 'NO_ARTIFACT',
    });
    const chunks = observer.subscribe(artifactPushSubject('tokyo', token), {
      callback: (_error, msg) => void msg.respond(encodeArtifactMessage({ ok: true, seq: 0 })),
    });
    await observer.flush();
    const tokyo = await connectNats(
      { NATS_URL: leaf.url, NATS_NKEY_SEED_FILE: join(keys, 'agent-tokyo.nk') },
      { name: 'artifact-tokyo-agent', maxReconnectAttempts: 0 },
    );
    const errors: string[] = [];
    void (async () => {
      for await (const status of tokyo.status()) if (status.type === 'error') errors.push(String(status.error));
    })();
    try {
      const h = natsHeaders();
      h.set(ARTIFACT_HEADERS.seq, '0');
      h.set(ARTIFACT_HEADERS.last, '1');
      const ack = await vi.waitFor(
        () =>
          tokyo.request(artifactPushSubject('tokyo', token), new Uint8Array(100), {
            timeout: 2_000,
            headers: h,
            noMux: true,
            reply: artifactAckSubject('tokyo', `n${Math.random().toString(36).slice(2)}`),
          }),
        { timeout: 15_000 },
      );
      expect(decodeArtifactMessage(artifactAckSchema, ack.data)).toEqual({ ok: true, seq: 0 });
      tokyo.publish(artifactPushSubject('london', token), new Uint8Array(100));
      await tokyo.flush();
      await vi.waitFor(() => expect(errors.join(' ')).toMatch(/permissions violation for publish/i));
      expect(String(await tokyo.subscribe(artifactPullSubject('tokyo', 'tokyo-leaf')).closed)).toMatch(
        /permissions violation/i,
      );
    } finally {
      chunks.unsubscribe();
      await tokyo.close();
    }
  });

  it('perfwatch start joins the shipped hub like any gateway and agent: each its own user, over TLS', async () => {
    const ports = { PORT: String(await freePort()), PERFWATCH_DEMO_PORT: String(await freePort()) };
    const start = spawnPerfwatch(['start'], {
      ...ports,
      NATS_URL: hub.url,
      NATS_NKEY_SEED_FILE: join(keys, 'gateway.nk'),
      PERFWATCH_AGENT_NATS_NKEY_SEED_FILE: join(keys, 'agent-s_carolina.nk'),
      NATS_TLS_CA_FILE: cert,
      MONGODB_URI: db.MONGODB_URI,
      MONGODB_DB: `${db.MONGODB_DB}_start`,
      // Its demo site is on loopback, which an agent on a shared NATS may not reach unless told.
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
    });
    try {
      const [line] = await start.waitFor(/curl -s -H "Authorization: (pw_[^"]+)" "([^"]+)"/, 60_000);
      const [, startToken, url] = /Authorization: (pw_[^"]+)" "([^"]+)"/.exec(line)!;
      await vi.waitFor(() => expect(registry.agents('s_carolina')?.map((a) => a.agentId)).toContain('local'), {
        timeout: 15_000,
      });
      const res = await fetch(url!, { headers: { Authorization: startToken! } });
      const body = await res.json();
      expect(res.status, JSON.stringify(body).slice(0, 500)).toBe(200);
      expect(auditResultSchema.parse(body).mobile!.s_carolina!.runs[0]!.agentId).toBe('local');
    } finally {
      expect(await start.stop('SIGTERM')).toBe(0);
    }
  }, 180_000);
});
