import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  auditResultSchema,
  verifyWebhookSignature,
  webhookPayloadSchema,
  type WebhookPayload,
} from '@perfwatch/common';
import { type ProjectRecord } from '@perfwatch/gateway';
import { freePort } from '../support/local-servers.ts';
import { main as adminMain } from '../../gateway/src/admin/admin-cli.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Issue 17's alerts, with real parts: a scheduled project of the heavy fixture page measured by
// a `perfwatch agent` process (real Chromium and Lighthouse) through a gateway on nats-server
// and the MongoDB-wire server; its webhook, added with `perfwatch admin add-webhook`, posts to
// a real HTTP receiver on loopback. The budget (TBT at most 2 s) fails on mobile, where
// Lighthouse's CPU slowdown multiplies the page's one-second task, and holds on desktop: one
// failing cell, one event per change of its state.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agent: PerfwatchProcess;
let project: ProjectRecord;
let secret: string;
let adminEnv: Record<string, string>;
const page = () => `${inject('siteUrl')}heavy.html`;

interface Received {
  body: string;
  signature: string | undefined;
  delivery: string | undefined;
  at: number;
}
const received: Received[] = [];
let receiver: Server | undefined;
let receiverPort: number;

async function startReceiver(): Promise<void> {
  receiver = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        body: Buffer.concat(chunks).toString('utf8'),
        signature: req.headers['x-perfwatch-signature'] as string | undefined,
        delivery: req.headers['x-perfwatch-delivery'] as string | undefined,
        at: Date.now(),
      });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(receiverPort, '127.0.0.1', resolve));
}

async function stopReceiver(): Promise<void> {
  const closing = new Promise((resolve) => receiver!.close(resolve));
  receiver!.closeAllConnections();
  await closing;
  receiver = undefined;
}

function text(): { stream: Writable; read(): string } {
  let written = '';
  return {
    stream: new Writable({ write: (chunk: Buffer, _enc, done) => ((written += chunk.toString()), done()) }),
    read: () => written,
  };
}

const payloads = () => received.map((r) => webhookPayloadSchema.parse(JSON.parse(r.body)));

beforeAll(async () => {
  nats = await isolatedNats();
  receiverPort = await freePort();
  await startReceiver();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    runTimeoutMs: 120_000,
    replyTimeoutMs: 240_000,
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PUBLIC_URL: 'https://perfwatch.example/',
      SCHEDULER_INTERVAL_MS: 250,
      MAX_ACTIVE_UPDATES_PER_USER: 1,
      // Verdict re-tests would only lengthen the runs; this test is about budgets.
      MAX_RETESTS: 0,
      WEBHOOK_POLL_MS: 200,
      WEBHOOK_RETRY_FIRST_MS: 1_000,
      WEBHOOK_RETRY_MAX_MS: 4_000,
    },
  });
  agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: 'london',
    PERFWATCH_AGENT_ID: 'london-alerts',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
    // Lighthouse's own 4×: calibrated on a saturated machine an agent may slow by 2.4× only.
    PERFWATCH_CPU_MULTIPLIER: '4',
  });
  await agent.waitFor(/agent serving location/);
  await gateway.admin.createUser('alerts');
  // A tick every 20 s; one update at a time, so the snapshots come one after another.
  project = await gateway.admin.addProject('alerts', page(), {
    locations: ['london'],
    runs: 1,
    schedule: '*/20 * * * * *',
  });
  const env = (adminEnv = {
    MONGODB_URI: inject('mongoUri'),
    MONGODB_DB: gateway.store.dbName,
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  const out = text();
  const err = text();
  expect(
    await adminMain(['admin', 'set-budgets', 'alerts', page(), '--budget', 'tbt=2000'], env, {
      out: out.stream,
      err: err.stream,
    }),
    err.read(),
  ).toBe(0);
  expect(
    await adminMain(
      ['admin', 'add-webhook', 'alerts', `http://127.0.0.1:${receiverPort}/perfwatch`, '--project', page()],
      env,
      { out: out.stream, err: err.stream },
    ),
    err.read(),
  ).toBe(0);
  // The signing secret is the last word of add-webhook's output.
  secret = out.read().trim().split(/\s+/).at(-1)!;
  expect(secret).toMatch(/^pwhs_/);
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  if (receiver) await stopReceiver();
  await nats?.dispose();
});

/** The project's snapshots, oldest first, with each cell's checks. */
async function snapshots() {
  const summaries = await gateway.store.listSnapshots(project.id);
  return Promise.all(summaries.map(async (s) => (await gateway.store.findSnapshot(project.id, s.date))!));
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const mobileChecks = (snapshot: Awaited<ReturnType<typeof snapshots>>[number]) =>
  snapshot.results.find((r) => r.device === 'mobile')!.checks!;
const desktopChecks = (snapshot: Awaited<ReturnType<typeof snapshots>>[number]) =>
  snapshot.results.find((r) => r.device === 'desktop')!.checks!;

describe('alerts from budgets, through signed webhooks', () => {
  it('announces a confirmed failure once, stays quiet while it fails, and announces the recovery, to a receiver that was down for 30 s', async () => {
    // 1. The first scheduled snapshot misses the budget on mobile: measured once more, confirmed, announced.
    const first = await until('the first snapshot', async () => (await snapshots())[0], 240_000);
    const failed = mobileChecks(first)[0]!;
    expect(failed).toMatchObject({
      key: 'tbt',
      kind: 'budget',
      pass: false,
      state: 'failing',
      event: 'budget.failed',
      confirmation: { pass: false },
    });
    expect(failed.actual).toBeGreaterThan(2_000);
    expect(failed.confirmation!.actual).toBeGreaterThan(2_000);
    expect(desktopChecks(first)[0]).toMatchObject({ key: 'tbt', pass: true, state: 'passing' });
    expect(desktopChecks(first)[0]!.event).toBeUndefined();
    expect(first.updateType).toBe('scheduled');

    await until('the budget.failed delivery', async () => (received.length > 0 ? true : undefined), 15_000);
    const [delivery] = received;
    expect(verifyWebhookSignature(secret, delivery!.body, delivery!.signature)).toBe(true);
    const firstDate = first.date.toISOString().slice(0, 19);
    expect(payloads()).toEqual([
      {
        event: 'budget.failed',
        project: page(),
        device: 'mobile',
        location: 'london',
        snapshotDate: firstDate,
        checks: [failed],
        dashboardUrl: `https://perfwatch.example/#/snapshot?${new URLSearchParams({ url: page(), date: firstDate })}`,
      } satisfies WebhookPayload,
    ]);
    // /v1/audit shows the same checks beside the seed's fields.
    const { token } = await gateway.admin.createToken('alerts');
    const audit = await fetch(`${gateway.url}/v1/audit?url=${encodeURIComponent(page())}&date=${firstDate}`, {
      headers: { Authorization: token },
    });
    expect(auditResultSchema.parse(await audit.json()).mobile!.london!.checks).toEqual([failed]);

    // 2. The next snapshot fails too: no confirmation run, no event, nothing sent.
    const second = await until('a second snapshot', async () => (await snapshots())[1], 240_000);
    const stillFailing = mobileChecks(second)[0]!;
    expect(stillFailing).toMatchObject({ pass: false, state: 'failing' });
    expect(stillFailing.event).toBeUndefined();
    expect(stillFailing.confirmation).toBeUndefined();
    await sleep(3_000);
    expect(received).toHaveLength(1);

    // 3. The receiver goes down; the budget is relaxed (through the API); the first snapshot
    //    checked against it passes and announces the recovery, delivered once the receiver is back.
    await stopReceiver();
    const down = Date.now();
    const relaxed = await fetch(`${gateway.url}/v1/budgets`, {
      method: 'POST',
      headers: { Authorization: token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: page(), budgets: { tbt: 60_000 } }),
    });
    expect(relaxed.status).toBe(200);
    const recovered = await until(
      'a snapshot that recovers',
      async () => (await snapshots()).find((s) => mobileChecks(s)[0]!.event === 'budget.recovered'),
      300_000,
    );
    expect(mobileChecks(recovered)[0]).toMatchObject({ key: 'tbt', limit: 60_000, pass: true, state: 'passing' });
    // Every snapshot between the first and the recovery announced nothing.
    const all = await snapshots();
    expect(
      all
        .slice(1, all.indexOf(all.find((s) => s.date.getTime() === recovered.date.getTime())!))
        .flatMap((s) => s.results.flatMap((r) => r.checks!.filter((c) => c.event))),
    ).toEqual([]);
    const hook = (await gateway.store.listWebhooks(project.userId))[0]!;
    const pending = await until(
      'an attempt at the recovery delivery',
      async () =>
        (await gateway.store.listDeliveries(hook.id, 10)).find((d) => d.event === 'budget.recovered' && d.attempts > 0),
      15_000,
    );
    expect(pending.status).toBe('pending');
    await sleep(Math.max(0, 30_000 - (Date.now() - down)));
    expect(received).toHaveLength(1);
    await startReceiver();
    const back = Date.now();

    await until('the budget.recovered delivery', async () => (received.length > 1 ? true : undefined), 15_000);
    const late = received[1]!;
    expect(late.at - back).toBeLessThan(10_000);
    expect(verifyWebhookSignature(secret, late.body, late.signature)).toBe(true);
    const recoveredDate = recovered.date.toISOString().slice(0, 19);
    expect(payloads()[1]).toMatchObject({
      event: 'budget.recovered',
      device: 'mobile',
      location: 'london',
      snapshotDate: recoveredDate,
      checks: [mobileChecks(recovered)[0]],
    });
    // Recorded once the receiver's answer is in, a moment after the receiver has the body.
    const deliveries = await until(
      'the recovery recorded delivered',
      async () => {
        const listed = await gateway.store.listDeliveries(hook.id, 10);
        return listed[0]?.status === 'delivered' ? listed : undefined;
      },
      10_000,
    );
    expect(deliveries.map((d) => [d.event, d.status])).toEqual([
      ['budget.recovered', 'delivered'],
      ['budget.failed', 'delivered'],
    ]);
    expect(deliveries[0]!.attempts).toBeGreaterThan(1);
    expect(deliveries[0]!.id).toBe(late.delivery);
    // What an operator sees: both deliveries, the late one with its failed attempts counted.
    const listing = text();
    expect(
      await adminMain(['admin', 'webhook-deliveries', 'alerts'], adminEnv, { out: listing.stream, err: text().stream }),
    ).toBe(0);
    expect(listing.read()).toMatch(
      new RegExp(`budget\\.recovered +delivered +attempts=${deliveries[0]!.attempts} .*id=${late.delivery}`),
    );
    expect(listing.read()).toMatch(/budget\.failed +delivered +attempts=1 /);
  }, 900_000);
});
