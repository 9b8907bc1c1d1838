import type { NatsConnection } from '@nats-io/nats-core';
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import {
  connectNats,
  createLogger,
  createShutdown,
  createTargetGuard,
  endNats,
  flowSchema,
  parseAllowList,
  shutdownOnSignals,
} from '@perfwatch/common';
import {
  createLocalAgent,
  createRunnerPool,
  exitOnUnhandledRejection,
  probeSecurity,
  startAgent,
} from '@perfwatch/agent';
import { createAdmin, gatewayConfigWith, startGateway, storeFromEnv, type Admin, type Store } from '@perfwatch/gateway';
import { loadStartConfig, type StartConfig } from './config.ts';
import { startDemoSite } from './demo-site-server.ts';

const LOCATION = 's_carolina';

/**
 * `perfwatch start`: everything on one machine, with no configuration. A gateway and one agent
 * (location s_carolina) in this process, talking over an in-process bus; an embedded store in
 * PERFWATCH_DATA_DIR (perfwatch.sqlite); a demo site to measure; a demo user whose new token is
 * printed with a ready-to-paste curl line (the previous start's token revoked). NATS_URL and MONGODB_URI switch to the real parts.
 */
export async function startPerfwatch(env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const config = loadStartConfig(env);
  const logger = startLogger(config);
  exitOnUnhandledRejection(logger);
  // The embedded store makes its directory when it opens; with MONGODB_URI nothing goes there.
  const { store, where: storeWhere } = storeFromEnv(config);
  await store.init();
  const { nc, agentNc } = await connectStartNats(config);
  const site = await startDemoSite({ port: config.PERFWATCH_DEMO_PORT });
  const { runner, agent, localAgent } = startOneAgent(config, logger, agentNc);
  const gateway = await startGateway({
    ...(localAgent ? { localAgents: [localAgent] } : { nc: nc! }),
    store,
    logger,
    config: localGatewayConfig(config),
  });

  const admin = createAdmin(store);
  const demoUser = 'demo';
  const token = await mintStartToken({ admin, store, user: demoUser });
  const demoUrl = site.url;
  await addDemoProjects(admin, store, demoUser, demoUrl);

  // Listening for signals before the banner: once it shows, Ctrl-C stops everything in order
  // (on a loaded machine the banner could reach a terminal before the next line ran).
  const stopped = stopOnSignals(
    config,
    logger,
    [
      { name: 'gateway', run: () => gateway.stop() },
      { name: 'agent', run: () => agent.stop() },
      {
        name: 'NATS',
        run: async () => {
          if (agentNc !== nc) await endNats(agentNc);
          await endNats(nc);
        },
      },
      { name: 'Chromes', run: () => runner.close() },
      { name: 'store', run: () => store.close() },
      { name: 'demo site', run: () => site.close() },
    ],
    runner,
  );
  process.stdout.write(
    banner({
      base: gateway.http.url,
      bus: nc ? `NATS at ${config.NATS_URL}` : 'in-process',
      storeWhere,
      demoUser,
      demoUrl,
      token,
    }),
  );

  await stopped;
}

/** NATS_URL's connections: the gateway's, and the agent's own when it has credentials of its own. */
async function connectStartNats(config: StartConfig) {
  if (!config.NATS_URL) return { nc: undefined, agentNc: undefined };
  const nc = await connectNats({ ...config, NATS_URL: config.NATS_URL }, { name: 'perfwatch-start' });
  const agentNc =
    config.PERFWATCH_AGENT_NATS_CREDS_FILE || config.PERFWATCH_AGENT_NATS_NKEY_SEED_FILE
      ? await connectNats(
          {
            ...config,
            NATS_URL: config.NATS_URL,
            NATS_CREDS_FILE: config.PERFWATCH_AGENT_NATS_CREDS_FILE,
            NATS_NKEY_SEED_FILE: config.PERFWATCH_AGENT_NATS_NKEY_SEED_FILE,
          },
          { name: 'perfwatch-start-agent' },
        )
      : nc;
  return { nc, agentNc };
}

/** Resolves once a signal has stopped every part, in order, within SHUTDOWN_TIMEOUT_MS. */
function stopOnSignals(
  config: StartConfig,
  logger: Logger,
  parts: Parameters<typeof createShutdown>[1],
  runner: { close(): Promise<unknown> },
): Promise<void> {
  return new Promise<void>((resolve) =>
    shutdownOnSignals(
      createShutdown(
        {
          logger,
          deadlineMs: config.SHUTDOWN_TIMEOUT_MS,
          // Chromes killed first, but never waited on for more than 5 s: the deadline is the deadline.
          onDeadline: () =>
            void Promise.race([runner.close(), new Promise((resolve) => setTimeout(resolve, 5_000))]).finally(() =>
              process.exit(1),
            ),
        },
        [...parts, { name: 'done', run: resolve }],
      ),
    ),
  );
}

/** The agent of location s_carolina: on the in-process bus, or on NATS_URL's NATS when set. */
function startOneAgent(config: StartConfig, logger: Logger, nc: NatsConnection | undefined) {
  const runner = createRunnerPool({
    size: 1,
    worker: {
      chromePath: config.CHROME_PATH,
      noSandbox: process.getuid?.() === 0,
      runsPerBrowser: config.PERFWATCH_RUNS_PER_BROWSER,
      allowTargets: config.PERFWATCH_ALLOW_TARGETS,
      logLevel: config.LOG_LEVEL,
    },
    logger,
  });
  const guard = createTargetGuard({ allow: parseAllowList(config.PERFWATCH_ALLOW_TARGETS) });
  const agentDeps = {
    location: LOCATION,
    runner,
    logger,
    agentId: 'local',
    probeSecurity: (url: string) => probeSecurity(url, { guard }),
  } as const;
  const localAgent = nc ? undefined : createLocalAgent(agentDeps);
  const agent = localAgent ?? startAgent({ ...agentDeps, nc: nc! });
  return { runner, agent, localAgent };
}

function localGatewayConfig(config: StartConfig) {
  return gatewayConfigWith({
    PORT: config.PORT,
    HOST: config.HOST,
    // One process on one machine: no load balancer to wait for on stop.
    SHUTDOWN_READINESS_DELAY_MS: 0,
    // One machine: its webhook receivers may be on it too, as its measured pages may.
    PERFWATCH_ALLOW_TARGETS: config.PERFWATCH_ALLOW_TARGETS,
    // The artifact store's files go beside the embedded store's (PERFWATCH_DATA_DIR/artifacts).
    PERFWATCH_DATA_DIR: config.PERFWATCH_DATA_DIR,
    ...(config.CRUX_API_KEY ? { CRUX_API_KEY: config.CRUX_API_KEY } : {}),
  });
}

/** Readable lines on a terminal (or LOG_FORMAT=pretty), JSON lines otherwise; on stderr. */
function startLogger(config: StartConfig): Logger {
  const readable = config.LOG_FORMAT === 'pretty' || (config.LOG_FORMAT === 'auto' && process.stderr.isTTY === true);
  const destination = readable
    ? pretty({
        destination: 2,
        sync: true,
        colorize: process.stderr.isTTY === true,
        translateTime: 'SYS:HH:MM:ss',
        ignore: 'pid,hostname,name',
      })
    : pino.destination(2);
  return createLogger({ name: 'perfwatch', level: config.LOG_LEVEL, destination });
}

/**
 * The demo site's home page, a page that misses performance budgets (for trying --ci), and its
 * product page measured as a user flow (docs/flows.md): the page, a click on "Add to cart", the cart.
 */
async function addDemoProjects(admin: Admin, store: Store, user: string, demoUrl: string): Promise<void> {
  const existing = new Set((await store.listProjects((await store.findUserByName(user))!.id)).map((p) => p.url));
  for (const url of [demoUrl, `${demoUrl}heavy.html`, `${demoUrl}cart.html`]) {
    if (existing.has(url)) continue;
    const project = await admin.addProject(user, url, { locations: [LOCATION], runs: 1 });
    if (url.endsWith('cart.html')) await store.setProjectFlow(project.id, DEMO_FLOW);
  }
}

const DEMO_FLOW = flowSchema.parse({
  steps: [
    { kind: 'navigate', name: 'product' },
    { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click', text: 'Add to cart' }] },
    { kind: 'snapshot', name: 'cart' },
  ],
});

function banner({
  base,
  bus,
  storeWhere,
  demoUser,
  demoUrl,
  token,
}: {
  base: string;
  bus: string;
  storeWhere: string;
  demoUser: string;
  demoUrl: string;
  token: string;
}): string {
  return [
    '',
    `perfwatch is running at ${base}  (dashboard: ${base}/)`,
    `  bus: ${bus} · store: ${storeWhere}`,
    `demo site: ${demoUrl}`,
    `token for user "${demoUser}" (shown once; the last start's is revoked): ${token}`,
    'run a real Lighthouse audit of the demo site (about 10-20 s):',
    `  curl -s -H "Authorization: ${token}" "${base}/v1/update?url=${encodeURIComponent(demoUrl)}&device=mobile"`,
    'or with the CLI:',
    `  PERFWATCH_TOKEN=${token} npm run perfwatch -- update ${demoUrl} --device mobile`,
    `a user flow (the product page, "Add to cart", the cart; its INP per step): ${demoUrl}cart.html`,
    `  PERFWATCH_TOKEN=${token} npm run perfwatch -- update ${demoUrl}cart.html --device desktop`,
    '',
  ].join('\n');
}

/**
 * The demo user's token for this start: a new one, printed once, and the one the last start
 * printed revoked (its prefix, which is not a secret, is noted in the store), so restarts do
 * not pile up live tokens nobody holds any more. Tokens made with `perfwatch admin` are left
 * alone.
 */
async function mintStartToken({
  admin,
  store,
  user,
}: {
  admin: ReturnType<typeof createAdmin>;
  store: Store;
  user: string;
}): Promise<string> {
  const note = `start-token-prefix:${user}`;
  const last = await store.readNote(note);
  if (last) await store.revokeToken(last);
  const { token, prefix } = (await store.findUserByName(user))
    ? await admin.createToken(user)
    : await admin.createUser(user);
  await store.writeNote(note, prefix);
  return token;
}
