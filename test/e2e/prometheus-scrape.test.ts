import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { freePort } from '../support/local-servers.ts';
import { runPerfwatch, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats } from '../support/test-services.ts';

// A gateway process and an agent process after a real update: their /metrics pass
// `promtool check metrics`, and a real Prometheus (Debian's) scrapes both, loads the alert
// rules and answers queries for perfwatch's metrics.

const deploy = join(dirname(fileURLToPath(import.meta.url)), '../../deploy');
const rules = join(deploy, 'prometheus/perfwatch-rules.yml');
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: PerfwatchProcess;
let agent: PerfwatchProcess;
let prometheus: ChildProcess | undefined;
let dir: string;
let gatewayUrl: string;
let agentOpsUrl: string;
let prometheusUrl: string;

function promtoolCheckMetrics(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile('promtool', ['check', 'metrics'], (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
    child.stdin!.end(text);
  });
}

async function query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as {
    status: string;
    data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  };
  expect(body.status).toBe('success');
  return body.data.result;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-prom-'));
  nats = await isolatedNats();
  const db = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: `pwprom_${randomUUID().slice(0, 8)}` };
  const created = await runPerfwatch(['admin', 'create-user', 'prom', '--json'], db);
  const token = JSON.parse(created.output.trim().split('\n').at(-1)!).token as string;
  const page = `${inject('siteUrl')}index.html`;
  await runPerfwatch(['admin', 'add-project', 'prom', page, '--locations', 'london', '--runs', '1'], db);
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  gateway = spawnPerfwatch(['gateway'], {
    ...db,
    NATS_URL: nats.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    SHUTDOWN_READINESS_DELAY_MS: '0',
  });
  agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: 'london',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
    OPS_HOST: '127.0.0.1',
  });
  await gateway.waitFor(/gateway listening/);
  agentOpsUrl = (await agent.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"ops server listening/))[1]!;
  await agent.waitFor(/agent serving location/);
  await vi.waitFor(
    async () =>
      expect(await (await fetch(`${gatewayUrl}/metrics`)).text()).toMatch(/perfwatch_agents\{location="london"\} 1/),
    { timeout: 15_000 },
  );
  const res = await fetch(`${gatewayUrl}/v1/update?url=${encodeURIComponent(page)}&device=desktop`, {
    headers: { Authorization: token },
  });
  expect(res.status).toBe(200);

  const promPort = await freePort();
  prometheusUrl = `http://127.0.0.1:${promPort}`;
  const config = join(dir, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      `rule_files: ['${rules}']`,
      'scrape_configs:',
      `  - { job_name: perfwatch-gateway, static_configs: [{ targets: ['${new URL(gatewayUrl).host}'] }] }`,
      `  - { job_name: perfwatch-agent, static_configs: [{ targets: ['${new URL(agentOpsUrl).host}'] }] }`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: 'ignore' },
  );
}, 120_000);

afterAll(async () => {
  prometheus?.kill('SIGTERM');
  await agent?.stop();
  await gateway?.stop();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('metrics with Prometheus', () => {
  it('the gateway and agent scrapes pass promtool check metrics', async () => {
    const gatewayText = await (await fetch(`${gatewayUrl}/metrics`)).text();
    const agentText = await (await fetch(`${agentOpsUrl}/metrics`)).text();
    expect(gatewayText).toMatch(/perfwatch_updates_total\{mode="sync",update_type="manual",outcome="complete"\} 1/);
    // Every run the agent made is one the gateway kept, with its verdict: one, or two when the
    // gateway doubted the first and measured it again.
    const agentRuns = Number(
      /perfwatch_lighthouse_run_duration_seconds_count\{location="london",device="desktop",outcome="ok"\} (\d+)/.exec(
        agentText,
      )?.[1],
    );
    const judged = [
      ...gatewayText.matchAll(
        /^perfwatch_runs_total\{location="london",device="desktop",verdict="(reliable|suspect)"\} (\d+)$/gm,
      ),
    ].map((m) => [m[1], Number(m[2])] as const);
    expect([1, 2, 3]).toContain(agentRuns);
    expect(judged.reduce((n, [, count]) => n + count, 0)).toBe(agentRuns);
    // A suspect run is measured again (unless doubted for its host alone): every run but the
    // last is suspect, and the last may be.
    const suspect = judged.find(([verdict]) => verdict === 'suspect')?.[1] ?? 0;
    expect([agentRuns - 1, agentRuns]).toContain(suspect);
    // Every perfwatch series the dashboard and the alerts use is one these programs export.
    const exported = new Set([...`${gatewayText}\n${agentText}`.matchAll(/^# TYPE (\w+) /gm)].map((m) => m[1]!));
    const used = new Set(
      [
        ...`${await readFile(join(deploy, 'grafana/perfwatch-dashboard.json'), 'utf8')}\n${await readFile(rules, 'utf8')}`.matchAll(
          /\b(perfwatch_\w+|process_\w+)/g,
        ),
      ].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, '')),
    );
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
    for (const text of [gatewayText, agentText]) {
      const { code, output } = await promtoolCheckMetrics(text);
      expect(output).toBe('');
      expect(code).toBe(0);
    }
  });

  it('a real Prometheus scrapes both, loads the alert rules, and answers queries for perfwatch metrics', async () => {
    await vi.waitFor(async () => expect((await query('up{job=~"perfwatch-.*"} == 1')).length).toBe(2), {
      timeout: 30_000,
      interval: 500,
    });
    const agents = await query('perfwatch_agents{location="london"}');
    expect(agents.map((r) => r.value[1])).toEqual(['1']);
    const runs = await query('sum(perfwatch_lighthouse_run_duration_seconds_count{outcome="ok"})');
    const kept = await query('sum(perfwatch_runs_total)');
    expect(Number(runs[0]!.value[1])).toBeGreaterThanOrEqual(1);
    expect(kept[0]!.value[1]).toBe(runs[0]!.value[1]);
    // Every dashboard query is one Prometheus accepts, and the ones about runs have data.
    const dashboard = JSON.parse(await readFile(join(deploy, 'grafana/perfwatch-dashboard.json'), 'utf8')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    for (const panel of dashboard.panels) for (const target of panel.targets) await query(target.expr);
    expect((await query('max by (location) (perfwatch_agents)')).map((r) => r.metric['location'])).toContain('london');
    const groups = (await (await fetch(`${prometheusUrl}/api/v1/rules`)).json()) as {
      data: { groups: Array<{ name: string; rules: Array<{ name: string; health: string }> }> };
    };
    const loaded = groups.data.groups.flatMap((g) => g.rules);
    expect(loaded.map((r) => r.name)).toContain('PerfwatchLocationWithoutAgent');
    await vi.waitFor(
      async () => {
        const health = ((await (await fetch(`${prometheusUrl}/api/v1/rules`)).json()) as typeof groups).data.groups
          .flatMap((g) => g.rules)
          .map((r) => r.health);
        expect(health.every((h) => h === 'ok')).toBe(true);
      },
      { timeout: 15_000, interval: 500 },
    );
  }, 60_000);
});
