import { once } from 'node:events';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { auditResultSchema, connectNats, type AuditJob, type Location } from '@perfwatch/common';
import {
  createAdmin,
  createNatsDispatcher,
  gatewayConfigWith,
  startAgentRegistry,
  startGateway,
  type AgentRegistry,
  type GatewayRuntime,
  type MongoStore,
} from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { freePort, startNatsServer, type LocalServer } from '../support/local-servers.ts';
import { spawnNode, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { silentLogger, testStore } from '../support/test-services.ts';
import { writeSelfSignedCert } from '../support/tls.ts';

// Replies later than NATS's default window (2 minutes), through the shipped hub
// (deploy/nats/nats-server.conf) and region (leafnode-region.conf) configurations with their
// roles, as nats-credentials writes their keys, the gateway's timeouts at their defaults:
//  - a run that takes longer than 2 minutes on agents directly on the hub (s_carolina) and
//    behind a region's leaf node (london) is a 200 of a sync update, its result stored;
//  - a run that outlasts its deadline (real Chromium on a page that never answers, behind
//    tokyo's leaf node) reaches the gateway's dispatcher as the agent's RUN_TIMEOUT, not as
//    the TIMEOUT of a reply that never came.
// With `allow_responses: true` in the agent roles, or the services' default response
// threshold, nats-server drops these replies and the gateway records TIMEOUT.
//
// Two changes to the shipped files, neither touching a reply window: the hub's leaf-node port
// moves off 7422, which nats-leaf-region.test.ts holds while the two files may run at once; and
// london's region server is the tokyo file changed for london as its comment tells operators to.

const shipped = join(dirname(fileURLToPath(import.meta.url)), '../../deploy/nats');
/** nats-server's reply window when none is configured (allow_responses: true, response_threshold). */
const NATS_DEFAULT_WINDOW_MS = 120_000;
/** The stand-in agents' runs: past NATS's default window, well inside the gateway's wait for them. */
const SLOW_RUN_MS = NATS_DEFAULT_WINDOW_MS + 5_000;
const gatewayDefaults = gatewayConfigWith({});

let dir: string;
let keys: string;
const servers: LocalServer[] = [];
let gatewayNc: NatsConnection;
let registry: AgentRegistry;
let store: MongoStore;
let gateway: GatewayRuntime;
let token: string;
let site: Server;
let hangUrl: string;
const hanging = new Set<ServerResponse>();
let chromeAgent: PerfwatchProcess;
const slowAgents: Array<{ agent: Agent; nc: NatsConnection }> = [];
const page = () => `${inject('siteUrl')}index.html`;

function parseEnv(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

/** `text` with `from` replaced, which must occur exactly once. */
function replaceOnce(text: string, from: string, to: string): string {
  if (text.split(from).length !== 2) throw new Error(`expected ${JSON.stringify(from)} once in the shipped file`);
  return text.replace(from, to);
}

/** A region's server from the shipped leafnode-region.conf, for `location`. */
async function startRegion(
  location: Location,
  hubEnv: Record<string, string>,
  hubLeafUrl: string,
  cert: string,
): Promise<LocalServer> {
  const regionDir = join(dir, `region-${location}`);
  await cp(shipped, regionDir, { recursive: true });
  const file = join(regionDir, 'leafnode-region.conf');
  let text = await readFile(file, 'utf8');
  if (location !== 'tokyo') {
    text = replaceOnce(text, 'include "roles/agent-tokyo.conf"', `include "roles/agent-${location}.conf"`);
    text = replaceOnce(text, 'server_name: perfwatch-leaf-tokyo', `server_name: perfwatch-leaf-${location}`);
    await writeFile(file, text);
  }
  const server = await startNatsServer({
    binary: inject('natsServerBinary'),
    dir: regionDir,
    configFile: file,
    env: {
      PERFWATCH_AGENT_NKEY: hubEnv[`PERFWATCH_AGENT_${location.toUpperCase()}_NKEY`]!,
      PERFWATCH_HUB_LEAF_URL: hubLeafUrl,
      PERFWATCH_LEAF_SEED: (await readFile(join(keys, `leaf-${location}.nk`), 'utf8')).trim(),
      NATS_TLS_CA_FILE: cert,
    },
    jetstream: 'as-configured',
  });
  servers.push(server);
  return server;
}

/** An agent whose runner takes SLOW_RUN_MS and answers with a captured result. */
async function startSlowAgent(location: Location, natsUrl: string, ca?: string): Promise<void> {
  const nc = await connectNats(
    {
      NATS_URL: natsUrl,
      NATS_NKEY_SEED_FILE: join(keys, `agent-${location}.nk`),
      ...(ca ? { NATS_TLS_CA_FILE: ca } : {}),
    },
    { name: `slow-${location}`, maxReconnectAttempts: 0 },
  );
  const agent = startAgent({
    nc,
    location,
    runner: fixtureRunner({ delayMs: SLOW_RUN_MS }),
    logger: silentLogger,
    agentId: `slow-${location}`,
    announceIntervalMs: 1_000,
  });
  slowAgents.push({ agent, nc });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-reply-window-'));
  keys = join(dir, 'keys');
  const generated = spawnNode(['scripts/nats-credentials.ts', keys], {});
  expect(await new Promise((resolve) => generated.child.once('exit', resolve)), generated.output()).toBe(0);
  const hubEnv = parseEnv(await readFile(join(keys, 'hub.env'), 'utf8'));
  const { cert, key } = await writeSelfSignedCert(dir);

  const hubDir = join(dir, 'hub');
  await cp(shipped, hubDir, { recursive: true });
  const hubLeafPort = await freePort();
  const hubFile = join(hubDir, 'nats-server.conf');
  await writeFile(
    hubFile,
    replaceOnce(
      await readFile(hubFile, 'utf8'),
      'leafnodes {\n  port: 7422\n',
      `leafnodes {\n  port: ${hubLeafPort}\n`,
    ),
  );
  const hub = await startNatsServer({
    binary: inject('natsServerBinary'),
    dir: hubDir,
    configFile: hubFile,
    env: { ...hubEnv, NATS_TLS_CERT_FILE: cert, NATS_TLS_KEY_FILE: key, NATS_STORE_DIR: join(hubDir, 'jetstream') },
    jetstream: 'as-configured',
  });
  servers.push(hub);
  const hubLeafUrl = `tls://127.0.0.1:${hubLeafPort}`;
  const [tokyo, london] = await Promise.all([
    startRegion('tokyo', hubEnv, hubLeafUrl, cert),
    startRegion('london', hubEnv, hubLeafUrl, cert),
  ]);

  gatewayNc = await connectNats(
    { NATS_URL: hub.url, NATS_NKEY_SEED_FILE: join(keys, 'gateway.nk'), NATS_TLS_CA_FILE: cert },
    { name: 'reply-window-gateway', maxReconnectAttempts: 0 },
  );
  registry = await startAgentRegistry({ nc: gatewayNc, logger: silentLogger });
  store = await testStore();
  // Started before the agents: it hears each one's first announcement.
  gateway = await startGateway({
    nc: gatewayNc,
    store,
    logger: silentLogger,
    // The defaults (RUN_TIMEOUT_MS 120 s): no re-test of a run the verdicts doubt, which would
    // be a second slow run.
    config: gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SHUTDOWN_READINESS_DELAY_MS: 0, MAX_RETESTS: 0 }),
  });
  const admin = createAdmin(store);
  ({ token } = await admin.createUser('slow-runs'));
  await admin.addProject('slow-runs', page(), { locations: ['s_carolina', 'london'], runs: 1 });

  site = createServer((_req, res) => void hanging.add(res));
  site.listen(0, '127.0.0.1');
  await once(site, 'listening');
  hangUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/hang`;

  chromeAgent = spawnPerfwatch(['agent'], {
    NATS_URL: tokyo.url,
    NATS_NKEY_SEED_FILE: join(keys, 'agent-tokyo.nk'),
    PERFWATCH_LOCATION: 'tokyo',
    PERFWATCH_AGENT_ID: 'tokyo-chrome',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  await startSlowAgent('s_carolina', hub.url, cert);
  await startSlowAgent('london', london.url);
  await chromeAgent.waitFor(/agent serving location/);
  await vi.waitFor(
    () =>
      expect(
        (['tokyo', 's_carolina', 'london'] as const).map((l) => registry.agents(l)?.map((a) => a.agentId)),
      ).toEqual([['tokyo-chrome'], ['slow-s_carolina'], ['slow-london']]),
    { timeout: 30_000 },
  );
}, 120_000);

afterAll(async () => {
  await chromeAgent?.stop();
  for (const { agent, nc } of slowAgents) await agent.stop().finally(() => nc.close());
  await gateway?.stop();
  await registry?.stop();
  await gatewayNc?.drain();
  await store?.close();
  for (const res of hanging) res.destroy();
  site?.closeAllConnections();
  site?.close();
  for (const server of servers.reverse()) await server.stop();
  if (!process.env['KEEP_NATS_DIR']) await rm(dir, { recursive: true, force: true });
});

/** Within the gateway's own bound for a reply (RUN_TIMEOUT_MS + 30 s), and the test's set-up and stop beside it. */
const TEST_TIMEOUT_MS = gatewayDefaults.RUN_TIMEOUT_MS + 120_000;

describe("replies past NATS's default 2 minutes, through the shipped NATS configuration", () => {
  it.concurrent(
    'a run that takes longer than 2 minutes, on the hub and behind a leaf node, is the result of a sync update',
    async ({ expect }) => {
      const started = performance.now();
      const res = await fetch(`${gateway.http.url}/v1/update`, {
        method: 'POST',
        headers: { Authorization: token, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: page(), device: 'desktop' }),
      });
      const body = await res.json();
      expect(res.status, JSON.stringify(body).slice(0, 600)).toBe(200);
      const cells = auditResultSchema.parse(body).desktop!;
      expect(Object.keys(cells).sort()).toEqual(['london', 's_carolina']);
      for (const cell of Object.values(cells)) {
        expect(cell!.runs).toHaveLength(1);
        expect(cell!.runs[0]!.agentId).toMatch(/^slow-/);
      }
      // The replies came after NATS's default window: what this test is about.
      expect(performance.now() - started).toBeGreaterThanOrEqual(SLOW_RUN_MS);
    },
    TEST_TIMEOUT_MS,
  );

  it.concurrent(
    "a run that outlasts its deadline reaches the gateway as the agent's RUN_TIMEOUT, not as TIMEOUT",
    async ({ expect }) => {
      const dispatcher = createNatsDispatcher({ nc: gatewayNc, logger: silentLogger, registry });
      const job: AuditJob = {
        jobId: 'hang.desktop.tokyo.0',
        updateId: 'hang',
        url: hangUrl,
        device: 'desktop',
        location: 'tokyo',
        runIndex: 0,
        timeoutMs: gatewayDefaults.RUN_TIMEOUT_MS,
      };
      const started = performance.now();
      const outcome = await dispatcher.dispatch(job, {
        timeoutMs: gatewayDefaults.SYNC_UPDATE_TIMEOUT_MS,
        requestId: 'reply-window-hang',
      });
      expect(outcome, `${JSON.stringify(outcome)}\n${chromeAgent.output().slice(-3000)}`).toMatchObject({
        ok: false,
        agentId: 'tokyo-chrome',
        error: { code: 'RUN_TIMEOUT', message: `the run took longer than ${gatewayDefaults.RUN_TIMEOUT_MS} ms` },
      });
      // The page held Chrome for the whole run deadline, and the reply came after NATS's default window.
      expect(hanging.size).toBeGreaterThanOrEqual(1);
      expect(performance.now() - started).toBeGreaterThan(NATS_DEFAULT_WINDOW_MS);
    },
    TEST_TIMEOUT_MS,
  );
});
