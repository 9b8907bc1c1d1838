import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { auditResultSchema, snapshotListSchema } from '@perfwatch/common';
import { freePort } from '../support/local-servers.ts';
import { runPerfwatch, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats } from '../support/test-services.ts';

const exec = promisify(execFile);

// `perfwatch start` (what `npm start` runs) on a machine with nothing configured: started in an
// empty directory with an environment of PATH and HOME only (and two free ports, so it cannot
// meet another test), it must need no NATS and no database server: gateway and agent in one
// process over the in-process bus, the store a file under ./data.
let cwd: string;
let proc: PerfwatchProcess | undefined;

afterAll(async () => {
  await proc?.stop();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

async function curl(line: string): Promise<{ status: number; body: unknown }> {
  const argv = [...line.matchAll(/"([^"]+)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1);
  const { stdout } = await exec('curl', [...argv, '-w', '\n%{http_code}'], { maxBuffer: 64 * 1024 * 1024 });
  const at = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(at + 1)), body: JSON.parse(stdout.slice(0, at)) };
}

describe('perfwatch start', () => {
  it('with no configuration: prints a token and a curl line that returns a real Lighthouse result, and keeps it across a restart', async () => {
    cwd = await mkdtemp(join(tmpdir(), 'perfwatch-start-'));
    const ports = { PORT: String(await freePort()), PERFWATCH_DEMO_PORT: String(await freePort()) };
    proc = spawnPerfwatch(['start'], ports, { cwd, bare: true });
    const [curlLine] = await proc.waitFor(/curl -s -H "Authorization: pw_[^"]+" "[^"]+"/, 60_000);
    const token = /Authorization: (pw_[^"]+)"/.exec(curlLine)![1]!;
    expect(proc.output()).toMatch(/bus: in-process · store: .*\/data\/perfwatch\.sqlite/);
    // Not on a terminal: its logs are JSON lines, for a collector. (Waited for: stderr and stdout
    // are pipes of their own, and the banner on stdout may come first.)
    await proc.waitFor(/^\{"level":30,.*"msg":"gateway listening"/m, 10_000);
    expect(existsSync(join(cwd, 'data', 'perfwatch.sqlite'))).toBe(true);

    const { status, body } = await curl(curlLine);
    expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
    const result = auditResultSchema.parse(body);
    const cell = result.mobile!.s_carolina!;
    const demo = `http://127.0.0.1:${ports.PERFWATCH_DEMO_PORT}/`;
    expect(cell.lighthouse['finalDisplayedUrl']).toBe(demo);
    expect(cell.lighthouse['lighthouseVersion']).toMatch(/^13\./);
    expect(cell.lighthouse.elementCount).toBeGreaterThan(400);
    expect(result.desktop).toBeUndefined();
    const date = cell.lighthouse.date;

    expect(await proc.stop('SIGTERM')).toBe(0);

    // Started again on the same directory: a new token, the first one revoked; the snapshot is there.
    proc = spawnPerfwatch(['start'], ports, { cwd, bare: true });
    const [againLine] = await proc.waitFor(/curl -s -H "Authorization: pw_[^"]+"/, 60_000);
    const second = /Authorization: (pw_[^"]+)"/.exec(againLine)![1]!;
    expect(second).not.toBe(token);
    const base = `http://127.0.0.1:${ports.PORT}`;
    expect((await fetch(`${base}/v1/projects`, { headers: { Authorization: token } })).status).toBe(401);
    const headers = { Authorization: second };
    const list = snapshotListSchema.parse(
      await (await fetch(`${base}/v1/updates?url=${encodeURIComponent(demo)}`, { headers })).json(),
    );
    expect(list.mobile!.map((s) => s.date)).toEqual([date]);
    const again = auditResultSchema.parse(
      await (await fetch(`${base}/v1/audit?url=${encodeURIComponent(demo)}&date=${date}`, { headers })).json(),
    );
    expect(again.mobile!.s_carolina!.lighthouse['fetchTime']).toBe(cell.lighthouse['fetchTime']);
    // The admin CLI works on the same embedded store while perfwatch start runs.
    const added = await runPerfwatch(
      ['admin', 'add-project', 'demo', 'https://added.example/', '--locations', 's_carolina'],
      {},
      { cwd, bare: true },
    );
    expect(added.code, added.output).toBe(0);
    const projects = (await (await fetch(`${base}/v1/projects`, { headers })).json()) as {
      projects: Array<{ url: string }>;
    };
    expect(projects.projects.map((p) => p.url)).toEqual([
      demo,
      `${demo}cart.html`,
      `${demo}heavy.html`,
      'https://added.example/',
    ]);
    // The demo's user flow, measured by the in-process agent: each step, the timespan's INP
    // at least the 120 ms its "Add to cart" handler holds the thread.
    const cart = encodeURIComponent(`${demo}cart.html`);
    const flow = auditResultSchema.parse(
      await (await fetch(`${base}/v1/update?url=${cart}&device=desktop`, { headers })).json(),
    ).desktop!.s_carolina!;
    expect(flow.steps!.map((s) => s.name)).toEqual(['product', 'add to cart', 'cart']);
    expect(flow.steps![1]!.runs[0]!.inp).toBeGreaterThanOrEqual(120);
    // The dashboard is served too.
    expect(await (await fetch(`${base}/`)).text()).toContain('<title>perfwatch</title>');
    expect(await proc.stop('SIGTERM')).toBe(0);
  }, 240_000);

  it('on a terminal: readable log lines, no JSON, and a clean stop', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-start-tty-'));
    const ports = { PORT: String(await freePort()), PERFWATCH_DEMO_PORT: String(await freePort()) };
    const onTty = spawnPerfwatch(['start'], ports, { cwd: dir, bare: true, tty: true });
    try {
      await onTty.waitFor(/curl -s -H "Authorization: pw_[^"]+"/, 60_000);
      // Colours and all: a time, the level, the message, its fields on lines of their own.
      const text = stripVTControlCharacters(onTty.output());
      expect(text).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: gateway listening\r?$/m);
      expect(text).toMatch(/^ {4}url: "http:\/\/127\.0\.0\.1:\d+"\r?$/m);
      expect(text).not.toMatch(/"level":/);
      expect(onTty.output()).toContain('\u001b[');
      expect(await onTty.stop('SIGTERM'), onTty.output()).toBe(0);
      expect(stripVTControlCharacters(onTty.output())).toMatch(/INFO: shutting down\r?\n {4}reason: "SIGTERM"/);
    } finally {
      await onTty.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('with NATS_URL and MONGODB_URI: the same start on a real nats-server and MongoDB-wire server', async () => {
    const nats = await isolatedNats();
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-start-real-'));
    const db = `pwstart_${randomUUID().slice(0, 8)}`;
    const env = { NATS_URL: nats.url, MONGODB_URI: inject('mongoUri'), MONGODB_DB: db };
    // On a NATS others can publish to, its agent is any agent: no loopback unless allowed.
    const guarded = spawnPerfwatch(
      ['start'],
      { ...env, PORT: String(await freePort()), PERFWATCH_DEMO_PORT: String(await freePort()) },
      { cwd: dir, bare: true },
    );
    try {
      const [curlLine] = await guarded.waitFor(/curl -s -H "Authorization: pw_[^"]+" "[^"]+"/, 60_000);
      const { status, body } = await curl(curlLine);
      expect(status).toBe(502);
      expect(JSON.stringify(body)).toMatch(/not a public address/);
      expect(await guarded.stop('SIGTERM')).toBe(0);
    } finally {
      await guarded.stop();
    }
    const ports = { PORT: String(await freePort()), PERFWATCH_DEMO_PORT: String(await freePort()) };
    const real = spawnPerfwatch(
      ['start'],
      { ...ports, ...env, PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8' },
      { cwd: dir, bare: true },
    );
    try {
      const [curlLine] = await real.waitFor(/curl -s -H "Authorization: pw_[^"]+" "[^"]+"/, 60_000);
      expect(real.output()).toContain(`bus: NATS at ${nats.url} · store: MongoDB database ${db}`);
      const { status, body } = await curl(curlLine);
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      expect(auditResultSchema.parse(body).mobile!.s_carolina!.runs[0]!.agentId).toBe('local');
      // Nothing but the artifacts was written under ./data: the parts it was pointed at hold the
      // data, and the artifact store is on disk unless told otherwise (ARTIFACT_STORE, ARTIFACT_DIR).
      expect(readdirSync(join(dir, 'data'))).toEqual(['artifacts']);
      const cells = body as { mobile: { s_carolina: { artifacts?: unknown } } };
      expect(cells.mobile.s_carolina.artifacts).toMatchObject({
        requests: { state: 'stored' },
        trace: { state: 'stored' },
      });
      expect(await real.stop('SIGTERM')).toBe(0);
    } finally {
      await real.stop();
      await nats.dispose();
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
