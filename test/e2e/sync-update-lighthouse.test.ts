import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import {
  auditResultSchema,
  cpuMultiplierFor,
  medianRunIndex,
  errorEnvelopeSchema,
  formatApiDateTime,
  parseApiDateTime,
} from '@perfwatch/common';
import { freePort } from '../support/local-servers.ts';
import {
  runPerfwatch,
  spawnPerfwatch,
  spawnServingAgent,
  type PerfwatchProcess,
} from '../support/perfwatch-process.ts';
import { isolatedNats } from '../support/test-services.ts';

// End to end: a gateway process and an agent process (real Chromium, real Lighthouse) on a
// real nats-server and a real MongoDB-wire server, set up with the admin CLI, driven over HTTP.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: PerfwatchProcess;
let agent: PerfwatchProcess;
let baseUrl: string;
let token: string;
const page = () => `${inject('siteUrl')}index.html`;

beforeAll(async () => {
  nats = await isolatedNats();
  const db = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: `pwe2e_${randomUUID().slice(0, 8)}` };
  const created = await runPerfwatch(['admin', 'create-user', 'e2e', '--json'], db);
  expect(created.code, created.output).toBe(0);
  token = JSON.parse(created.output.trim().split('\n').at(-1)!).token;
  for (const url of [page(), 'http://127.0.0.1:9/']) {
    const added = await runPerfwatch(['admin', 'add-project', 'e2e', url, '--locations', 'london', '--runs', '1'], db);
    expect(added.code, added.output).toBe(0);
  }

  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  gateway = spawnPerfwatch(['gateway'], {
    ...db,
    NATS_URL: nats.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    SHUTDOWN_READINESS_DELAY_MS: '2000',
  });
  agent = await spawnServingAgent(nats.url, 'london', 'e2e-london');
  await gateway.waitFor(/gateway listening/);
}, 90_000);

afterAll(async () => {
  await gateway?.stop();
  await agent?.stop();
  await nats?.dispose();
});

describe('sync update end to end', () => {
  it('audits the fixture page with Lighthouse on both devices and serves the same snapshot from /v1/audit', async () => {
    const started = Date.now();
    const res = await fetch(`${baseUrl}/v1/update?url=${encodeURIComponent(page())}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    const body = await res.json();
    const elapsed = Date.now() - started;
    expect(res.status, JSON.stringify(body).slice(0, 500)).toBe(200);

    const result = auditResultSchema.parse(body);
    for (const device of ['mobile', 'desktop'] as const) {
      const cell = result[device]!.london!;
      const lhr = cell.lighthouse as typeof cell.lighthouse & {
        lighthouseVersion: string;
        finalDisplayedUrl: string;
        configSettings: { formFactor: string };
        categories: Record<string, { score: number }>;
        audits: Record<string, { numericValue?: number }>;
      };
      expect(lhr.lighthouseVersion).toMatch(/^13\./);
      expect(lhr.finalDisplayedUrl).toBe(page());
      expect(lhr.configSettings.formFactor).toBe(device);
      expect(lhr.categories['performance']!.score).toBeGreaterThan(0.5);
      expect(lhr.audits['first-contentful-paint']!.numericValue).toBeGreaterThan(0);
      // About 460 elements in the fixture page's markup, a few more once its script ran.
      expect(cell.lighthouse.elementCount).toBeGreaterThan(400);
      // One run, and a re-test when the gateway doubted it for the run itself, not for its host
      // alone (then the median is the re-test's if that one is reliable); each with its verdict
      // and, when suspect, why. A run doubted only for its host is said once for the cell.
      const [run, ...retests] = cell.runs;
      expect(retests.every((r) => r.retestOf === 1)).toBe(true);
      expect(retests.length).toBeLessThanOrEqual(2);
      expect(retests.length > 0).toBe(run!.verdict === 'suspect' && !run!.hostOnly);
      for (const r of cell.runs) expect(r.reasons!.length > 0).toBe(r.verdict === 'suspect');
      expect(cell.verification!.host !== undefined).toBe(cell.runs.every((r) => r.hostOnly));
      // What the host gave others during each run is kept with it.
      for (const r of cell.runs) expect(r.otherCpuShare).toBeGreaterThanOrEqual(0);
      const firstReliable = cell.runs.findIndex((r) => r.verdict === 'reliable');
      expect(cell.median).toBe(
        retests.length === 0 ? 1 : firstReliable >= 0 ? firstReliable + 1 : medianRunIndex(cell.runs) + 1,
      );
      if (retests.length > 0) console.log(`${device}: run re-tested (${run!.reasons!.join('; ')})`);
      // The conditions of the run, stored with it: the machine's speed then and the agent's
      // calibrated baseline, the CPU slowdown Lighthouse applied, how busy the agent and host were.
      // Each run's multiplier is the calculator's for the baseline it ran with (a re-test may run
      // with a newer one: the agent measures again when a lone run finds the machine faster).
      for (const r of cell.runs) {
        expect(r.benchmarkIndex).toBeGreaterThan(0);
        expect(r.baselineBenchmarkIndex).toBeGreaterThan(0);
        expect(r.cpuMultiplier).toBe(device === 'desktop' ? 1 : (cpuMultiplierFor(r.baselineBenchmarkIndex!) ?? 1));
        expect(r.concurrentRuns).toBe(0);
        expect(r.loadAverage).toBeGreaterThanOrEqual(0);
        expect(r.chromeVersion).toMatch(/^\d+\.\d+/);
        expect(r.lighthouseVersion).toBe(lhr.lighthouseVersion);
      }
      // The stored result is the median run's, slowed as that run says.
      expect(
        (lhr as unknown as { configSettings: { throttling: { cpuSlowdownMultiplier: number } } }).configSettings
          .throttling.cpuSlowdownMultiplier,
      ).toBe(cell.runs[cell.median - 1]!.cpuMultiplier);
      expect(cell.locations).toEqual(['london']);
      expect(cell.defaultLocation).toBe('london');
      // Screenshots travel and are stored small: the final one and the filmstrip as WebP, each ≤ 30 kB.
      const pictures = lhr.audits as unknown as Record<
        string,
        { details?: { data?: string; items?: Array<{ data: string; timing: number }> } }
      >;
      const finalShot = pictures['final-screenshot']!.details!.data!;
      expect(finalShot).toMatch(/^data:image\/webp;base64,/);
      expect(Buffer.from(finalShot.split(',')[1]!, 'base64').length).toBeLessThanOrEqual(30 * 1024);
      const frames = pictures['screenshot-thumbnails']!.details!.items!;
      expect(frames.length).toBeGreaterThan(0);
      for (const frame of frames)
        expect(Buffer.from(frame.data.split(',')[1]!, 'base64').length).toBeLessThanOrEqual(30 * 1024);
      console.info(
        `${device}: final screenshot ${Buffer.from(finalShot.split(',')[1]!, 'base64').length} B, ${frames.length} frames, ${frames.reduce((n, f) => n + Buffer.from(f.data.split(',')[1]!, 'base64').length, 0)} B`,
      );
    }
    const date = result.mobile!.london!.lighthouse.date;
    expect(result.desktop!.london!.lighthouse.date).toBe(date);
    const snapshotAt = parseApiDateTime(date)!.getTime();
    expect(snapshotAt).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000);
    expect(snapshotAt).toBeLessThanOrEqual(Date.now());
    console.info(`e2e sync update, 2 devices × 1 run: ${elapsed} ms`);

    const audit = await fetch(`${baseUrl}/v1/audit?url=${encodeURIComponent(page())}&date=${date}`, {
      headers: { Authorization: token },
    });
    expect(audit.status).toBe(200);
    expect(await audit.json()).toEqual(body);

    const later = formatApiDateTime(new Date(snapshotAt + 1000));
    const none = await fetch(`${baseUrl}/v1/audit?url=${encodeURIComponent(page())}&date=${later}`, {
      headers: { Authorization: token },
    });
    expect(none.status).toBe(404);
  }, 180_000);

  it('reports a page that cannot load as 502 with the reason, and the agent keeps serving', async () => {
    const dead = 'http://127.0.0.1:9/';
    const res = await fetch(`${baseUrl}/v1/update?url=${encodeURIComponent(dead)}&device=mobile`, {
      headers: { Authorization: token, 'X-Request-Id': 'e2e-trace-502' },
    });
    const body = errorEnvelopeSchema.parse(await res.json());
    expect(res.status).toBe(502);
    expect(res.headers.get('x-request-id')).toBe('e2e-trace-502');
    expect(body.status).toBe('BAD_GATEWAY');
    expect(body.errors.join(' ')).toMatch(/mobile\/london: /);
    expect(agent.child.exitCode).toBeNull();
    // One request id from the HTTP request through NATS to the agent's log lines and back.
    expect(agent.output()).toMatch(/"requestId":"e2e-trace-502".*"msg":"run failed"/);
    await vi.waitFor(() => expect(gateway.output()).toMatch(/"req":\{"id":"e2e-trace-502","method":"GET"/));
    // Tokens never reach a log.
    expect(gateway.output()).not.toContain(token.slice(3, 20));
  }, 120_000);

  it('stops both programs cleanly on SIGTERM, the gateway turning unready before it stops serving', async () => {
    expect(await agent.stop('SIGTERM')).toBe(0);
    expect(agent.output()).toMatch(/agent stopped/);
    expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);
    const stopped = gateway.stop('SIGTERM');
    // During SHUTDOWN_READINESS_DELAY_MS the gateway answers, but no longer as ready.
    await vi.waitFor(async () => expect((await fetch(`${baseUrl}/readyz`)).status).toBe(503), {
      timeout: 1_500,
      interval: 100,
    });
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
    expect(await stopped).toBe(0);
  }, 60_000);
});
