import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTargetGuard, parseAllowList } from '@perfwatch/agent';
import { verifyWebhookSignature, webhookPayloadSchema, type CellCheck } from '@perfwatch/common';
import { SqliteStore } from './store/sqlite-store.ts';
import type { ProjectRecord } from './store/store.ts';
import { createWebhookOutbox } from './webhook-outbox.ts';
import { addWebhook } from './webhook-registry.ts';
import { createWebhookSender, retryDelayMs } from './webhook-sender.ts';

// The outbox and its sender against the embedded store and a real HTTP receiver on loopback.
const logger = pino({ level: 'silent' });
const loopback = createTargetGuard({ allow: parseAllowList('127.0.0.0/8') });
let store: SqliteStore;
let server: Server;
let target: string;
let answers: number[] = [];
const received: Array<{ body: string; headers: IncomingMessage['headers'] }> = [];

beforeAll(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.statusCode = answers.shift() ?? 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await store.close();
});

const failed: CellCheck = {
  key: 'performance',
  kind: 'budget',
  actual: 72,
  limit: 95,
  pass: false,
  message: 'performance score 72, budget at least 95',
  state: 'failing',
  confirmation: { actual: 71, pass: false },
  event: 'budget.failed',
};

async function projectWithHook(
  name: string,
  format: 'json' | 'slack' = 'json',
): Promise<{ project: ProjectRecord; secret: string }> {
  const user = await store.createUser(name);
  const project = await store.addProject({
    userId: user.id,
    url: `https://${name}.example/`,
    domain: `${name}.example`,
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
  const hook = await addWebhook(store, loopback, { userId: user.id, targetUrl: target, projectUrl: null, format });
  return { project, secret: hook.secret };
}

describe('webhook outbox and sender', () => {
  it("posts a budget event once, signed with the webhook's secret; a failed attempt is tried again later", async () => {
    const { project, secret } = await projectWithHook('signed');
    let clock = new Date('2026-06-01T10:00:01Z');
    const outbox = createWebhookOutbox({ store, logger, publicUrl: 'https://perfwatch.example/', now: () => clock });
    const event = {
      project,
      updateId: 'u1',
      date: new Date('2026-06-01T10:00:00Z'),
      results: [{ device: 'desktop' as const, location: 'london' as const, checks: [failed] }],
    };
    expect(await outbox.snapshotStored(event)).toBe(1);
    // The same snapshot announced again (a redelivered update): still one delivery.
    await outbox.snapshotStored(event);

    const sender = createWebhookSender({
      store,
      logger,
      guard: loopback,
      now: () => clock,
      retry: { firstMs: 1_000, maxMs: 8_000, giveUpAfterMs: 60_000 },
    });
    received.length = 0;
    answers = [503];
    expect(await sender.sendDue()).toBe(1);
    expect(await sender.sendDue()).toBe(0);
    clock = new Date(clock.getTime() + 2_000);
    expect(await sender.sendDue()).toBe(1);
    expect(received).toHaveLength(2);
    const { body, headers } = received[1]!;
    expect(received[0]!.body).toBe(body);
    expect(verifyWebhookSignature(secret, body, headers['x-perfwatch-signature'] as string)).toBe(true);
    expect(verifyWebhookSignature('pwhs_another', body, headers['x-perfwatch-signature'] as string)).toBe(false);
    const payload = webhookPayloadSchema.parse(JSON.parse(body));
    expect(payload).toMatchObject({
      event: 'budget.failed',
      project: project.url,
      device: 'desktop',
      location: 'london',
      snapshotDate: '2026-06-01T10:00:00',
      checks: [failed],
    });
    expect(payload.dashboardUrl).toBe(
      `https://perfwatch.example/#/snapshot?${new URLSearchParams({ url: project.url, date: '2026-06-01T10:00:00' })}`,
    );
    const [delivery] = await store.listDeliveries((await store.listWebhooks(project.userId))[0]!.id, 10);
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2, id: headers['x-perfwatch-delivery'] });
  });

  it("posts Slack's message for a slack webhook, and gives up on a receiver that fails for the whole window", async () => {
    const { project } = await projectWithHook('slacky', 'slack');
    const outbox = createWebhookOutbox({ store, logger, publicUrl: 'http://localhost:8080' });
    await outbox.updateFailed({ userId: project.userId, url: project.url, updateId: 'u2', reason: 'every run failed' });
    let clock = new Date();
    const sender = createWebhookSender({
      store,
      logger,
      guard: loopback,
      now: () => clock,
      retry: { firstMs: 1_000, maxMs: 2_000, giveUpAfterMs: 5_000 },
    });
    received.length = 0;
    answers = [500, 500, 500, 500, 500];
    for (let i = 0; i < 5; i++) {
      await sender.sendDue();
      clock = new Date(clock.getTime() + 3_000);
    }
    const text = (JSON.parse(received[0]!.body) as { text: string }).text;
    expect(text).toContain('Update failed');
    expect(text).toContain(project.url);
    expect(text).toContain('every run failed');
    const [delivery] = await store.listDeliveries((await store.listWebhooks(project.userId))[0]!.id, 10);
    expect(delivery).toMatchObject({ status: 'failed', lastError: 'HTTP 500' });
    expect(received.length).toBeLessThan(5);
  });

  it('refuses a private target unless allowed, when added and again when delivering', async () => {
    const user = await store.createUser('private');
    const publicOnly = createTargetGuard();
    await expect(
      addWebhook(store, publicOnly, { userId: user.id, targetUrl: target, projectUrl: null, format: 'json' }),
    ).rejects.toThrow(/not a public address/);
    await expect(
      addWebhook(store, publicOnly, {
        userId: user.id,
        targetUrl: 'ftp://files.example/',
        projectUrl: null,
        format: 'json',
      }),
    ).rejects.toThrow(/http\(s\)/);
    // Added while allowed, then delivered by a gateway whose rules refuse it: not posted.
    const project = await store.addProject({
      userId: user.id,
      url: 'https://private.example/',
      domain: 'private.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    await addWebhook(store, loopback, { userId: user.id, targetUrl: target, projectUrl: project.url, format: 'json' });
    await createWebhookOutbox({ store, logger, publicUrl: 'http://localhost' }).updateFailed({
      userId: user.id,
      url: project.url,
      updateId: 'u3',
      reason: 'x',
    });
    received.length = 0;
    await createWebhookSender({ store, logger, guard: publicOnly }).sendDue();
    expect(received).toHaveLength(0);
    const [delivery] = await store.listDeliveries((await store.listWebhooks(user.id))[0]!.id, 10);
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1 });
    expect(delivery!.lastError).toMatch(/not a public address/);
  });

  it('backs off by doubling up to the ceiling, with jitter', () => {
    const policy = { firstMs: 1_000, maxMs: 10_000, giveUpAfterMs: 86_400_000 };
    expect([1, 2, 3, 4, 5, 9].map((n) => retryDelayMs(n, policy, () => 0.5))).toEqual([
      1_000, 2_000, 4_000, 8_000, 10_000, 10_000,
    ]);
    expect(retryDelayMs(1, policy, () => 0)).toBe(800);
    expect(retryDelayMs(1, policy, () => 1)).toBe(1_200);
  });
});
