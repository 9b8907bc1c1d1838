import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { z } from 'zod';
import { createLogger, logLevelSchema, parseEnv } from '@perfwatch/common';
import { createRunnerPool, createTargetGuard, exitOnUnhandledRejection, parseAllowList, probeSecurity, startAgent } from '@perfwatch/agent';
import { createAdmin } from '../admin/admin.ts';
import { gatewayConfigWith } from '../config.ts';
import { startGateway } from '../gateway-runtime.ts';
import { MongoStore } from '../store/mongo-store.ts';
import { startDemoSite } from './demo-site-server.ts';
import { startFerretDb, startNatsServer, type LocalServer } from './local-servers.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

const startEnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  PERFWATCH_DATA_DIR: z.string().min(1).default('./data'),
  PERFWATCH_DEMO_PORT: z.coerce.number().int().min(1).max(65535).default(8081),
  PERFWATCH_TOOLS_DIR: z.string().min(1).default(join(repoRoot, '.tools/bin')),
  NATS_URL: z.string().min(1).optional(),
  MONGODB_URI: z.string().regex(/^mongodb(\+srv)?:\/\//).optional(),
  MONGODB_DB: z.string().min(1).default('perfwatch'),
  CHROME_PATH: z.string().min(1).default('/usr/bin/chromium'),
  /** Local mode audits the local demo site, so loopback is allowed here unless set otherwise. */
  PERFWATCH_ALLOW_TARGETS: z.string().default('127.0.0.0/8,::1/128'),
  LOG_LEVEL: logLevelSchema,
});

/**
 * `perfwatch start`: everything on one machine. A gateway and one agent (location s_carolina)
 * in this process; a nats-server and a FerretDB started here with their data under
 * PERFWATCH_DATA_DIR (unless NATS_URL / MONGODB_URI point elsewhere); a demo site to audit;
 * a demo user whose new token is printed with a ready-to-paste curl line.
 */
export async function main(env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const config = parseEnv(startEnvSchema, env);
  const logger = createLogger({ name: 'perfwatch', level: config.LOG_LEVEL, destination: pino.destination(2) });
  exitOnUnhandledRejection(logger);
  const dataDir = resolve(config.PERFWATCH_DATA_DIR);
  await mkdir(dataDir, { recursive: true });

  const started: LocalServer[] = [];
  const natsUrl: string = config.NATS_URL ?? (await startNatsServer({ binary: join(config.PERFWATCH_TOOLS_DIR, 'nats-server'), dir: join(dataDir, 'nats') }).then((s) => (started.push(s), s.url)));
  const mongoUri: string = config.MONGODB_URI ?? (await startFerretDb({ binary: join(config.PERFWATCH_TOOLS_DIR, 'ferretdb'), dir: join(dataDir, 'ferretdb') }).then((s) => (started.push(s), s.url)));

  const store = new MongoStore({ uri: mongoUri, dbName: config.MONGODB_DB });
  await store.init();
  const nc = await connect({ servers: natsUrl, name: 'perfwatch-start' });
  const site = await startDemoSite({ root: join(repoRoot, 'test/fixtures/site'), port: config.PERFWATCH_DEMO_PORT });
  const runner = createRunnerPool({ size: 1, worker: { chromePath: config.CHROME_PATH, noSandbox: process.getuid?.() === 0, runsPerBrowser: 50, allowTargets: config.PERFWATCH_ALLOW_TARGETS, logLevel: config.LOG_LEVEL }, logger });
  const guard = createTargetGuard({ allow: parseAllowList(config.PERFWATCH_ALLOW_TARGETS) });
  const agent = startAgent({ nc, location: 's_carolina', runner, logger, agentId: 'local', probeSecurity: (url) => probeSecurity(url, { guard }) });
  const gateway = await startGateway({
    nc,
    store,
    logger,
    // One process on one machine: no load balancer to wait for on stop.
    config: gatewayConfigWith({ PORT: config.PORT, HOST: config.HOST, SHUTDOWN_READINESS_DELAY_MS: 0 }),
  });

  const admin = createAdmin(store);
  const demoUser = 'demo';
  const { token } = (await store.findUserByName(demoUser)) ? await admin.createToken(demoUser) : await admin.createUser(demoUser);
  const demoUrl = site.url;
  if (!(await store.listProjects((await store.findUserByName(demoUser))!.id)).some((p) => p.url === demoUrl)) {
    await admin.addProject(demoUser, demoUrl, { locations: ['s_carolina'], runs: 1 });
  }

  const base = gateway.http.url;
  process.stdout.write(
    [
      '',
      `perfwatch is running at ${base}  (data in ${dataDir})`,
      `demo site: ${demoUrl}`,
      `token for user "${demoUser}" (shown once): ${token}`,
      'run a real Lighthouse audit of the demo site (about 10-20 s):',
      `  curl -s -H "Authorization: ${token}" "${base}/v1/update?url=${encodeURIComponent(demoUrl)}&device=mobile"`,
      '',
    ].join('\n'),
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    await gateway.stop();
    await agent.stop();
    await nc.drain();
    await runner.close();
    await store.close();
    await site.close();
    for (const server of started.reverse()) await server.stop();
    logger.flush();
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
  await nc.closed();
}
