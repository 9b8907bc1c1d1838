import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditResultSchema, overviewResponseSchema, updateStatusSchema, type AuditResult } from '@perfwatch/common';
import { freePort } from '../support/local-servers.ts';
import { errorsOf, getAndPost, send } from '../support/api-requests.ts';
import { compose, containerEngine, run, runLoud, STANDIN } from '../support/containers.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';

// The shipped files, built and run as a user would: both images from deploy/*.Dockerfile by
// `npm run images`'s script, the stack from deploy/docker-compose.yml (podman-compose here,
// docker compose where Docker runs), with NATS, MongoDB and Prometheus from local stand-ins
// (scripts/standin-images.sh; no registry serves images here). Real Lighthouse in the agent
// containers, Chrome in its own sandbox, runs on the fixture site served inside the stack.

const HOST_CA = '/etc/ssl/certs/ca-certificates.crt';
const project = `pwtest${randomInt(1_000, 9_999)}`;
const subnet = `10.89.${randomInt(150, 250)}.0/24`;
const PAGE = 'http://site:8000/index.html';
const SCHEDULED = 'http://site:8000/index.html?scheduled';
const files = ['-p', project, '-f', 'deploy/docker-compose.yml', '-f', 'test/deploy/compose.test-site.yml'];
let engine: string;
let env: Record<string, string>;
let gateway: string;
let prometheus: string;
let token: string;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
const timings: Record<string, number> = {};

function container(service: string): string {
  return engine === 'docker' ? `${project}-${service}-1` : `${project}_${service}_1`;
}

/**
 * GET on a program's ops port (9464, /metrics and /readyz), from inside its own container as
 * Prometheus and the health checks reach it: the host reaches no ops port.
 */
async function ops(service: string, path: string): Promise<{ status: number; body: string }> {
  const script = `fetch('http://127.0.0.1:9464${path}').then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })))`;
  return JSON.parse((await run(engine, ['exec', container(service), 'node', '-e', script])).stdout) as {
    status: number;
    body: string;
  };
}

async function admin(...args: string[]): Promise<string> {
  return (await run(engine, ['exec', container('gateway'), 'node', 'bin/perfwatch.js', 'admin', ...args])).stdout;
}

async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    timings[name] = Math.round(performance.now() - started);
  }
}

beforeAll(async () => {
  engine = await containerEngine();
  await timed('stand-in images', () => runLoud('bash', ['scripts/standin-images.sh']));
  const build = {
    PERFWATCH_NODE_IMAGE: `${STANDIN}/node:24-bookworm-slim`,
    // Registry traffic here passes a TLS-intercepting proxy known only to the host's trust store.
    ...(existsSync(HOST_CA) ? { PERFWATCH_BUILD_CA: HOST_CA } : {}),
  };
  await timed('images', () => runLoud('bash', ['scripts/images.sh'], { env: build }));

  const [port, prometheusPort] = [await freePort(), await freePort()];
  env = {
    PERFWATCH_NATS_IMAGE: `${STANDIN}/nats:2`,
    PERFWATCH_MONGO_IMAGE: `${STANDIN}/mongo:ferretdb`,
    PERFWATCH_PROMETHEUS_IMAGE: `${STANDIN}/prometheus:debian`,
    PERFWATCH_PORT: String(port),
    PERFWATCH_PROMETHEUS_PORT: String(prometheusPort),
    // The fixture site lives on the stack's own network, a private range agents refuse unless told.
    PERFWATCH_ALLOW_TARGETS: subnet,
  };
  await run(engine, ['network', 'create', '--subnet', subnet, `${project}_default`]);
  await timed('compose up', () => compose([...files, 'up', '-d'], env));
  gateway = `http://127.0.0.1:${port}`;
  prometheus = `http://127.0.0.1:${prometheusPort}`;
  await vi.waitFor(async () => expect((await ops('gateway', '/readyz')).status).toBe(200), {
    timeout: 120_000,
    interval: 500,
  });

  token = /token \(shown once, keep it secret\): (\S+)/.exec(await admin('create-user', 'compose-alice'))![1]!;
  await admin('add-project', 'compose-alice', PAGE, '--locations', 'frankfurt,tokyo', '--runs', '1');
  checker = await openApiResponseChecker(await (await fetch(`${gateway}/v1/openapi.json`)).json());
  // Both agents announced: an update offered before would find a location without agents.
  await vi.waitFor(
    async () => {
      const metrics = (await ops('gateway', '/metrics')).body;
      for (const location of ['frankfurt', 'tokyo'])
        expect(metrics).toMatch(new RegExp(`perfwatch_agents\\{location="${location}"\\} 1`));
    },
    { timeout: 120_000, interval: 1_000 },
  );
}, 1_800_000);

afterAll(async () => {
  if (!engine) return;
  if (Object.keys(timings).length) process.stderr.write(`compose-stack timings (ms): ${JSON.stringify(timings)}\n`);
  try {
    await compose([...files, 'down', '-v', '-t', '5'], env ?? {});
  } finally {
    await run(engine, ['network', 'rm', '-f', `${project}_default`]).catch(() => undefined);
  }
}, 120_000);

const auth = () => ({ Authorization: token });

describe('the images', () => {
  it('run as user node on a read-only root, and keep no build secret', async () => {
    for (const service of ['gateway', 'agent-frankfurt']) {
      const [inspected] = JSON.parse((await run(engine, ['inspect', container(service)])).stdout) as Array<{
        Config: { User: string };
        HostConfig: { ReadonlyRootfs: boolean };
      }>;
      expect(inspected!.Config.User, service).toBe('node');
      expect(inspected!.HostConfig.ReadonlyRootfs, service).toBe(true);
    }
    for (const image of ['perfwatch-gateway', 'perfwatch-agent']) {
      const { stdout } = await run(engine, [
        'run',
        '--rm',
        '--entrypoint',
        'sh',
        image,
        '-c',
        'ls -A /run/secrets 2>/dev/null; grep -rl "BEGIN CERTIFICATE" /app /root /home/node 2>/dev/null | grep -v node_modules || true',
      ]);
      expect(stdout.trim(), image).toBe('');
    }
  });
});

describe('the stack from deploy/docker-compose.yml', () => {
  it('runs a sync update with real Lighthouse in both locations, GET and POST alike, and serves it back', async () => {
    const [viaGet, viaPost] = await timed('sync update (GET, then POST)', () =>
      getAndPost(
        checker,
        gateway,
        'update',
        { url: PAGE, device: 'desktop' },
        { url: PAGE, device: 'desktop' },
        { token, same: false },
      ),
    );
    for (const reply of [viaGet, viaPost]) {
      expect(reply.status, JSON.stringify(reply.body).slice(0, 500)).toBe(200);
      const result: AuditResult = auditResultSchema.parse(reply.body);
      expect(Object.keys(result.desktop ?? {}).sort()).toEqual(['frankfurt', 'tokyo']);
      const cell = result.desktop!.frankfurt!;
      expect(cell.lighthouse['requestedUrl']).toBe(PAGE);
      expect((cell.lighthouse['categories'] as { performance: { score: number } }).performance.score).toBeGreaterThan(
        0,
      );
      // The median run's requests and trace reached the gateway's artifact volume.
      const { artifacts } = (reply.body as { desktop: { frankfurt: { artifacts?: unknown } } }).desktop.frankfurt;
      expect(artifacts).toMatchObject({ requests: { state: 'stored' }, trace: { state: 'stored' } });
    }
    const date = auditResultSchema.parse(viaPost.body).desktop!.tokyo!.lighthouse.date;
    const [audit] = await getAndPost(checker, gateway, 'audit', { url: PAGE, date }, { url: PAGE, date }, { token });
    expect(audit.status).toBe(200);
    expect(auditResultSchema.parse(audit.body).desktop!.tokyo!.lighthouse['requestedUrl']).toBe(PAGE);
    const day = date.slice(0, 10);
    const [overview] = await getAndPost(
      checker,
      gateway,
      'overview',
      { startDate: day, endDate: day },
      { dateRange: { startDate: day, endDate: day } },
      { token },
    );
    expect(
      overviewResponseSchema
        .parse(overview.body)
        .filter((record) => record.section === 'LIGHTHOUSE' && record.kpi === 'performance')
        .map((record) => record.location)
        .sort(),
    ).toEqual(['frankfurt', 'frankfurt', 'tokyo', 'tokyo']);
    const [projects] = await getAndPost(checker, gateway, 'projects', {}, {}, { token });
    expect(JSON.stringify(projects.body)).toContain(PAGE);
  }, 300_000);

  it('answers bad input, a bad token and another method as documented, GET and POST alike', async () => {
    const [bad] = await getAndPost(
      checker,
      gateway,
      'audit',
      { url: PAGE, date: 'yesterday' },
      { url: PAGE, date: 'yesterday' },
      { token },
    );
    expect(bad.status).toBe(400);
    expect(errorsOf(bad)).toMatch(/date/);
    const [unknown] = await getAndPost(
      checker,
      gateway,
      'update',
      { url: 'https://nobody.example/' },
      { url: 'https://nobody.example/' },
      { token },
    );
    expect(unknown.status).toBe(404);
    const [refused] = await getAndPost(checker, gateway, 'projects', {}, {}, { token: 'pw_not-a-token' });
    expect(refused.status).toBe(401);
    const put = await fetch(`${gateway}/v1/audit`, { method: 'PUT', headers: auth() });
    expect(put.status).toBe(405);
    expect((await send(gateway, 'overview', 'POST', { raw: '{"startDate":' }, auth())).status).toBe(400);
  });

  it('runs an async update through the JetStream queue to done, both locations stored', async () => {
    const accepted = await send(
      gateway,
      'update',
      'POST',
      { body: { url: PAGE, device: 'mobile', mode: 'async' } },
      auth(),
    );
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const { id } = accepted.body as { ok: number; id: string };
    const done = await timed('async update', () =>
      vi.waitFor(
        async () => {
          const state = updateStatusSchema.parse((await send(gateway, `updates/${id}`, 'GET', {}, auth())).body);
          expect(state.status).toMatch(/^(done|failed)$/);
          return state;
        },
        { timeout: 240_000, interval: 1_000 },
      ),
    );
    expect(done.status, JSON.stringify(done)).toBe('done');
    const audit = await send(
      gateway,
      'audit',
      'GET',
      { query: { url: PAGE, date: done.date!, device: 'mobile' } },
      auth(),
    );
    expect(Object.keys(auditResultSchema.parse(audit.body).mobile ?? {}).sort()).toEqual(['frankfurt', 'tokyo']);
  }, 300_000);

  it('runs a scheduled update on its cron time', async () => {
    // A schedule that fires once, a few seconds from now (the scheduler looks every 15 s).
    const at = new Date(Date.now() + 20_000);
    const cron = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
    await admin('add-project', 'compose-alice', SCHEDULED, '--locations', 'tokyo', '--runs', '1', '--schedule', cron);
    // Near midnight (UTC) the snapshot may be stored on the next day: the range takes both.
    const day = at.toISOString().slice(0, 10);
    const nextDay = new Date(at.getTime() + 86_400_000).toISOString().slice(0, 10);
    await timed('scheduled update', () =>
      vi.waitFor(
        async () => {
          const overview = await send(
            gateway,
            'overview',
            'GET',
            { query: { startDate: day, endDate: nextDay } },
            auth(),
          );
          const records = overviewResponseSchema
            .parse(overview.body)
            .filter((record) => record.url === SCHEDULED && record.kpi === 'performance');
          expect(records.map((record) => [record.device, record.location, record.updateType]).sort()).toEqual([
            ['desktop', 'tokyo', 'Scheduled'],
            ['mobile', 'tokyo', 'Scheduled'],
          ]);
        },
        { timeout: 240_000, interval: 2_000 },
      ),
    );
  }, 300_000);

  it('runs Chrome in its own sandbox: renderers in a user namespace of their own, never --no-sandbox', async () => {
    // Chrome stays warm between runs, so the last update's browser is still there to look at.
    const script = `const fs = require('fs');
const own = fs.readlinkSync('/proc/self/ns/user');
const chromes = fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).flatMap((p) => {
  try { return [{ args: fs.readFileSync('/proc/' + p + '/cmdline', 'utf8'), ns: fs.readlinkSync('/proc/' + p + '/ns/user') }]; } catch { return []; }
}).filter((p) => p.args.includes('chromium'));
console.log(JSON.stringify({ own, chromes }));`;
    const { own, chromes } = JSON.parse(
      (await run(engine, ['exec', container('agent-tokyo'), 'node', '-e', script])).stdout,
    ) as { own: string; chromes: Array<{ args: string; ns: string }> };
    expect(chromes.length).toBeGreaterThan(0);
    expect(chromes.filter((chrome) => chrome.args.includes('--no-sandbox'))).toEqual([]);
    const renderers = chromes.filter((chrome) => chrome.args.includes('--type=renderer'));
    expect(renderers.length).toBeGreaterThan(0);
    for (const renderer of renderers) expect(renderer.ns).not.toBe(own);
  });

  it('passes the health checks of NATS, the gateway and the agents, and Prometheus scrapes all three', async () => {
    for (const service of ['nats', 'gateway', 'agent-frankfurt', 'agent-tokyo']) {
      if (engine === 'podman') await run('podman', ['healthcheck', 'run', container(service)]);
      else
        expect(
          (await run('docker', ['inspect', '-f', '{{.State.Health.Status}}', container(service)])).stdout.trim(),
          service,
        ).toBe('healthy');
    }
    await vi.waitFor(
      async () => {
        const { data } = (await (await fetch(`${prometheus}/api/v1/targets`)).json()) as {
          data: { activeTargets: Array<{ labels: { job: string; instance: string }; health: string }> };
        };
        expect(data.activeTargets.map((target) => `${target.labels.instance} ${target.health}`).sort()).toEqual([
          'agent-frankfurt:9464 up',
          'agent-tokyo:9464 up',
          'gateway:9464 up',
        ]);
      },
      { timeout: 60_000, interval: 2_000 },
    );
  }, 120_000);

  it('serves /metrics and /readyz on the ops port inside the stack, never on the published port', async () => {
    for (const path of ['/metrics', '/readyz']) {
      const published = await fetch(`${gateway}${path}`);
      const body = await published.text();
      expect(published.status, `${path}: ${body.slice(0, 200)}`).toBe(404);
      expect(body).not.toMatch(/perfwatch_|process_cpu|"ready"/);
    }
    const metrics = await ops('gateway', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^perfwatch_http_request_duration_seconds_count\{/m);
    expect((await ops('gateway', '/readyz')).status).toBe(200);
    // The API and the dashboard stay on the published port, and it is the gateway's only one.
    expect((await send(gateway, 'projects', 'GET', {}, auth())).status).toBe(200);
    for (const service of ['gateway', 'agent-frankfurt', 'agent-tokyo', 'nats', 'mongodb']) {
      const published = (await run(engine, ['port', container(service)])).stdout.split('\n').filter(Boolean);
      if (service === 'gateway') expect(published.length).toBeGreaterThan(0);
      for (const binding of published)
        expect(binding, service).toMatch(service === 'gateway' ? /^8080\/tcp -> / : /^$/);
    }
  });

  it('runs every container with no capabilities, no-new-privileges and a seccomp filter', async () => {
    for (const service of ['nats', 'mongodb', 'gateway', 'agent-frankfurt', 'agent-tokyo', 'prometheus', 'site']) {
      // PID 1's own view: what the program and everything it starts may do.
      const status = (await run(engine, ['exec', container(service), 'cat', '/proc/1/status'])).stdout;
      const field = (name: string) => new RegExp(`^${name}:\\s*(\\S+)`, 'm').exec(status)?.[1];
      for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'])
        expect(field(set), `${service} ${set}`).toBe('0000000000000000');
      expect(field('NoNewPrivs'), service).toBe('1');
      expect(field('Seccomp'), service).toBe('2');
    }
  });

  it("publishes Prometheus on the host's loopback only", async () => {
    const prometheusPort = new URL(prometheus).port;
    expect((await run(engine, ['port', container('prometheus')])).stdout.trim()).toBe(
      `9090/tcp -> 127.0.0.1:${prometheusPort}`,
    );
    expect((await fetch(`${prometheus}/-/ready`)).status).toBe(200);
    // From any other address of this host, nothing answers on that port.
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;
    if (outside) await expect(fetch(`http://${outside}:${prometheusPort}/-/ready`)).rejects.toThrow();
  });

  it('stops an idle agent container within 2 s of SIGTERM', async () => {
    const started = performance.now();
    await run(engine, ['stop', '-t', '10', container('agent-frankfurt')]);
    const stopMs = performance.now() - started;
    timings['idle agent stop'] = Math.round(stopMs);
    const [inspected] = JSON.parse((await run(engine, ['inspect', container('agent-frankfurt')])).stdout) as Array<{
      State: { ExitCode: number };
    }>;
    expect(inspected!.State.ExitCode).toBe(0);
    expect(stopMs).toBeLessThan(2_500);
  });
});
