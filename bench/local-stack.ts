/**
 * The whole of perfwatch on this machine for benchmarks and measurement scripts: nats-server
 * and FerretDB from .tools/bin, the fixture site, a gateway, and in-process agents running real
 * Lighthouse behind the target guard (loopback allowed), as in production.
 */
import { spawn, type StdioOptions } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino, type Logger } from 'pino';
import type { Location } from '@perfwatch/common';
import { createRunnerPool, startAgent, type PageRunner, type RunnerPool } from '@perfwatch/agent';
import { createAdmin, gatewayConfigWith, MongoStore, startGateway, type Admin } from '@perfwatch/gateway';
import { startDemoSite } from '@perfwatch/local';
import { freePort, startFerretDb, startNatsServer } from '../test/support/local-servers.ts';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tools = join(root, '.tools/bin');

export interface StackAgent {
  location: Location;
  runsPerBrowser: number;
  /** Runs at once (PERFWATCH_CAPACITY); 1 unless given. */
  capacity?: number;
  /** Sees every run the agent makes, e.g. to time it. */
  onRun?: (output: Awaited<ReturnType<PageRunner['run']>>) => void;
}

export interface LocalStack {
  gatewayUrl: string;
  siteUrl: string;
  token: string;
  admin: Admin;
  /** A sync update of `url` for one device; resolves with its wall time and result body. */
  update(url: string, device?: 'mobile' | 'desktop'): Promise<{ ms: number; body: unknown }>;
  close(): Promise<void>;
}

export async function startLocalStack(agents: StackAgent[]): Promise<LocalStack> {
  const logger = pino({ level: 'silent' });
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-stack-'));
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const db = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const site = await startDemoSite();
  const store = new MongoStore({ uri: db.url, dbName: 'stack' });
  await store.init();
  const nc = await connect({ servers: nats.url });
  const { runners, started } = startAgents(nc, agents, logger);
  const gateway = await startGateway({
    nc,
    store,
    logger,
    config: gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SHUTDOWN_READINESS_DELAY_MS: 0 }),
  });
  const admin = createAdmin(store);
  const { token } = await admin.createUser('stack');

  return {
    gatewayUrl: gateway.http.url,
    siteUrl: site.url,
    token,
    admin,
    update: (url, device = 'mobile') => syncUpdate(gateway.http.url, token, url, device),
    async close() {
      await gateway.stop();
      for (const agent of started) await agent.stop();
      await nc.drain();
      for (const runner of runners) await runner.close();
      await store.close();
      await site.close();
      await db.stop();
      await nats.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The agents' runner as `perfwatch agent` builds it: worker threads, each with its own Chrome. */
export function benchRunnerPool(size: number, runsPerBrowser: number, logger: Logger): RunnerPool {
  return createRunnerPool({
    size,
    worker: {
      chromePath: process.env['CHROME_PATH'] ?? '/usr/bin/chromium',
      noSandbox: process.getuid?.() === 0,
      runsPerBrowser,
      allowTargets: '127.0.0.0/8',
      logLevel: 'silent',
    },
    logger,
  });
}

function startAgents(nc: NatsConnection, agents: StackAgent[], logger: Logger) {
  const runners = agents.map(({ runsPerBrowser, capacity = 1 }) => benchRunnerPool(capacity, runsPerBrowser, logger));
  const started = agents.map(({ location, onRun, capacity = 1 }, i) => {
    const runner = runners[i]!;
    const observed: PageRunner = {
      run: async (request) => {
        const output = await runner.run(request);
        onRun?.(output);
        return output;
      },
      // Calibrated as `perfwatch agent` is.
      ...(runner.calibrate ? { calibrate: () => runner.calibrate!() } : {}),
      close: () => runner.close(),
    };
    return startAgent({ nc, location, runner: observed, logger, agentId: `stack-${location}-${i}`, capacity });
  });
  return { runners, started };
}

async function syncUpdate(
  gatewayUrl: string,
  token: string,
  url: string,
  device: 'mobile' | 'desktop',
): Promise<{ ms: number; body: unknown }> {
  const startedAt = performance.now();
  const res = await fetch(`${gatewayUrl}/v1/update?url=${encodeURIComponent(url)}&device=${device}`, {
    headers: { Authorization: token },
  });
  const body: unknown = await res.json();
  if (res.status !== 200) throw new Error(`update answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
  return { ms: performance.now() - startedAt, body };
}

export interface ServerProcess {
  url: string;
  pid: number;
  /** The process's standard output, when `stdio` piped it (perfwatch start prints its token there). */
  stdout: NodeJS.ReadableStream | null;
  stop(): Promise<void>;
}

/**
 * `perfwatch gateway` (or `perfwatch start`) as a process of its own on a free port, ready:
 * `env` on top of this process's (LOG_LEVEL warn). BENCH_CPU_PROF=DIR writes its CPU profile there.
 */
export async function spawnServer(
  command: 'gateway' | 'start',
  env: Record<string, string>,
  {
    nodeFlags = [],
    stdio = 'inherit',
    readyTries = 200,
  }: { nodeFlags?: string[]; stdio?: StdioOptions; readyTries?: number } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const profile = process.env['BENCH_CPU_PROF'];
  const child = spawn(
    process.execPath,
    [
      ...nodeFlags,
      ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
      join(root, 'bin/perfwatch.js'),
      command,
    ],
    { env: { ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio },
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitReady(url, readyTries);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, pid: child.pid!, stdout: child.stdout, stop };
}

/** Waits until `url`'s /readyz answers ok, asking every 100 ms, `tries` times at most. */
async function waitReady(url: string, tries: number): Promise<void> {
  for (let i = 0; ; i++) {
    if ((await fetch(`${url}/readyz`).catch(() => null))?.ok) return;
    if (i > tries) throw new Error(`${url} did not become ready`);
    await sleep(100);
  }
}
