import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature, webhookPayloadSchema, type CellCheck } from '@perfwatch/common';
import { createAdmin } from '../admin/admin.ts';
import { createSecretBox } from '../accounts/secret-box.ts';
import { SqliteStore } from '../store/sqlite-store.ts';
import { WebhookLimitReached, type ProjectRecord } from '../store/store.ts';
import { createWebhookOutbox } from './webhook-outbox.ts';
import { addWebhook, listWebhookPage, UnknownCursor, WebhookRefused, type WebhookRules } from './webhook-registry.ts';
import { postWebhook } from './webhook-post.ts';
import { claimLeaseMs, createWebhookSender, retryDelayMs } from './webhook-sender.ts';
import { openWebhookSecret } from './webhook-secrets.ts';
import { createWebhookTargets } from './webhook-targets.ts';
import { gatewayConfigWith, webhookSenderOptionsOf } from '../config.ts';

// The outbox and its sender against the embedded store and real HTTP receivers on loopback.
const logger = pino({ level: 'silent' });
const loopback = createWebhookTargets('127.0.0.0/8');
const noKey = createSecretBox({});
const senderSettings = webhookSenderOptionsOf(gatewayConfigWith({}));
const rules: WebhookRules = { targets: loopback, secrets: noKey, maxPerUser: 20 };
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

/** A receiver that takes the request, answers 200 and then a byte every `everyMs`, never ending. */
async function trickling(everyMs: number): Promise<{ url: string; open: () => number; close(): Promise<void> }> {
  let open = 0;
  const trickler = createServer((req, res) => {
    open += 1;
    res.on('close', () => (open -= 1));
    req.resume();
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.flushHeaders();
    const timer = setInterval(() => res.write('.'), everyMs);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => trickler.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(trickler.address() as AddressInfo).port}/slow`,
    open: () => open,
    close: () => {
      trickler.closeAllConnections();
      return new Promise((resolve) => trickler.close(() => resolve()));
    },
  };
}

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

async function newProject(name: string): Promise<ProjectRecord> {
  const user = await store.createUser(name);
  return store.addProject({
    userId: user.id,
    url: `https://${name}.example/`,
    domain: `${name}.example`,
    locations: ['london'],
    defaultLocation: 'london',
    runs: 1,
    schedule: null,
  });
}

async function projectWithHook(
  name: string,
  format: 'json' | 'slack' = 'json',
  given: WebhookRules = rules,
): Promise<{ project: ProjectRecord; secret: string; webhookId: string }> {
  const project = await newProject(name);
  const hook = await addWebhook(store, given, { userId: project.userId, targetUrl: target, projectUrl: null, format });
  return { project, secret: hook.secret, webhookId: hook.id };
}

const announceFailure = (project: ProjectRecord, updateId: string, into: SqliteStore = store) =>
  createWebhookOutbox({ store: into, logger, publicUrl: 'http://localhost' }).updateFailed({
    userId: project.userId,
    url: project.url,
    updateId,
    reason: 'every run failed',
  });

describe('webhook outbox and sender', () => {
  it("posts a budget event once, signed with the webhook's secret and the time it was sent; a failed attempt is tried again later", async () => {
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
      ...senderSettings,
      store,
      logger,
      targets: loopback,
      secrets: noKey,
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
    const signature = headers['x-perfwatch-signature'] as string;
    // Signed when sent: the retry carries its own time, so a receiver's window never refuses it.
    expect(signature).toMatch(new RegExp(`^t=${clock.getTime() / 1000},v1=[0-9a-f]{64}$`));
    expect(received[0]!.headers['x-perfwatch-signature']).toMatch(`t=${Date.parse('2026-06-01T10:00:01Z') / 1000},`);
    const at = { now: clock.getTime() };
    expect(verifyWebhookSignature(secret, body, signature, at)).toBe(true);
    expect(verifyWebhookSignature('pwhs_another', body, signature, at)).toBe(false);
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
      ...senderSettings,
      store,
      logger,
      targets: loopback,
      secrets: noKey,
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
    const publicOnly = createWebhookTargets();
    const strict = { ...rules, targets: publicOnly };
    await expect(
      addWebhook(store, strict, { userId: user.id, targetUrl: target, projectUrl: null, format: 'json' }),
    ).rejects.toThrow(/not a public address/);
    await expect(
      addWebhook(store, strict, {
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
    await addWebhook(store, rules, { userId: user.id, targetUrl: target, projectUrl: project.url, format: 'json' });
    await announceFailure(project, 'u3');
    received.length = 0;
    await createWebhookSender({ ...senderSettings, store, logger, targets: publicOnly, secrets: noKey }).sendDue();
    expect(received).toHaveLength(0);
    const [delivery] = await store.listDeliveries((await store.listWebhooks(user.id))[0]!.id, 10);
    expect(delivery).toMatchObject({ status: 'pending', attempts: 1 });
    expect(delivery!.lastError).toMatch(/not a public address/);
  });

  it('takes plain http only to addresses PERFWATCH_ALLOW_TARGETS lists, when added and when delivering; https is the default', async () => {
    const project = await newProject('plain');
    const add = (targetUrl: string) =>
      addWebhook(store, rules, { userId: project.userId, targetUrl, projectUrl: null, format: 'json' });
    // A public address literal: nothing is resolved, nothing is connected to.
    await expect(add('http://93.184.216.34/hook')).rejects.toThrow(
      /plain http:\/\/ goes only to addresses PERFWATCH_ALLOW_TARGETS lists, and 93\.184\.216\.34 is not one; use https:\/\//,
    );
    await expect(add('http://93.184.216.34/hook')).rejects.toBeInstanceOf(WebhookRefused);
    const secure = await add('https://93.184.216.34/hook');
    expect(secure.targetUrl).toBe('https://93.184.216.34/hook');
    // Not posted to below: this machine reaches no public address.
    await store.removeWebhook(project.userId, secure.id);
    // Listed, http is fine (the loopback receiver of these tests).
    expect((await add(target)).targetUrl).toBe(target);

    // A record from before the rule (stored as it was), delivered now: refused without connecting.
    await store.addWebhook({
      userId: project.userId,
      targetUrl: 'http://93.184.216.34/old',
      projectUrl: null,
      format: 'json',
      secret: 'pwhs_old',
    });
    const hooks = await store.listWebhooks(project.userId);
    await announceFailure(project, 'u-plain');
    received.length = 0;
    await createWebhookSender({
      ...senderSettings,
      store,
      logger,
      targets: loopback,
      secrets: noKey,
      deadlineMs: 5_000,
    }).sendDue();
    expect(received).toHaveLength(1);
    const old = (await store.listDeliveries(hooks.find((h) => h.targetUrl.endsWith('/old'))!.id, 1))[0]!;
    expect(old).toMatchObject({ status: 'pending', attempts: 1 });
    expect(old.lastError).toMatch(/plain http:\/\/ goes only to addresses PERFWATCH_ALLOW_TARGETS lists/);
  });

  it('keeps secrets sealed under the secrets key, shows them once in the clear, still signs with those stored before, and seals those on rotate-secrets-key', async () => {
    const keyedKey = randomBytes(32).toString('base64');
    const keyed = createSecretBox({ key: keyedKey });
    const { project, secret, webhookId } = await projectWithHook('sealed', 'json', { ...rules, secrets: keyed });
    expect(secret).toMatch(/^pwhs_[A-Za-z0-9_-]{43}$/);
    const stored = (await store.findWebhook(webhookId))!.secret;
    expect(stored).toMatch(/^pwsec1\./);
    expect(stored).not.toContain(secret.slice(5));
    // One stored before secrets were sealed (or without a key): read as it is.
    const legacy = await store.addWebhook({
      userId: project.userId,
      targetUrl: target,
      projectUrl: null,
      format: 'json',
      secret: 'pwhs_stored_before',
    });
    await announceFailure(project, 'u-sealed');
    received.length = 0;
    await createWebhookSender({ ...senderSettings, store, logger, targets: loopback, secrets: keyed }).sendDue();
    expect(received).toHaveLength(2);
    const signatures = received.map((r) => r.headers['x-perfwatch-signature'] as string);
    const verifies = (key: string) => received.filter((r, i) => verifyWebhookSignature(key, r.body, signatures[i]));
    expect(verifies(secret)).toHaveLength(1);
    expect(verifies('pwhs_stored_before')).toHaveLength(1);

    // A gateway without the key cannot sign with a sealed secret: said, and tried again later.
    await announceFailure(project, 'u-keyless');
    received.length = 0;
    await createWebhookSender({ ...senderSettings, store, logger, targets: loopback, secrets: noKey }).sendDue();
    expect(received).toHaveLength(1);
    const { body, headers } = received[0]!;
    expect(verifyWebhookSignature('pwhs_stored_before', body, headers['x-perfwatch-signature'] as string)).toBe(true);
    expect((await store.listDeliveries(legacy.id, 1))[0]).toMatchObject({ status: 'delivered' });
    const [keyless] = await store.listDeliveries(webhookId, 1);
    expect(keyless).toMatchObject({ status: 'pending', attempts: 1 });
    expect(keyless!.lastError).toMatch(/signing secret cannot be opened: no PERFWATCH_SECRETS_KEY/);

    // rotate-secrets-key seals the one stored before, under the current key, to the same secret.
    const rotated = createSecretBox({ key: randomBytes(32).toString('base64'), previous: keyedKey });
    expect((await createAdmin(store, { secrets: rotated }).rotateSecretsKey()).webhookSecrets).toBeGreaterThanOrEqual(
      2,
    );
    for (const [id, shown] of [
      [legacy.id, 'pwhs_stored_before'],
      [webhookId, secret],
    ] as const) {
      const resealed = (await store.findWebhook(id))!;
      expect(resealed.secret).toMatch(/^pwsec1\./);
      expect(rotated.isCurrent(resealed.secret)).toBe(true);
      expect(openWebhookSecret(rotated, resealed)).toBe(shown);
    }
  });

  it('refuses a webhook past the per-user limit, and lists a page at a time', async () => {
    const project = await newProject('many');
    const capped = { ...rules, maxPerUser: 5 };
    const add = () =>
      addWebhook(store, capped, { userId: project.userId, targetUrl: target, projectUrl: null, format: 'json' });
    for (let i = 0; i < 5; i++) await add();
    await expect(add()).rejects.toBeInstanceOf(WebhookLimitReached);
    await expect(add()).rejects.toThrow(/you have 5 webhooks, as many as one user may have; remove one first/);
    // In the list's order (oldest first; ids within one millisecond in no order of their own).
    const ids = (await store.listWebhooks(project.userId)).map((h) => h.id);
    expect(ids).toHaveLength(5);

    const first = await listWebhookPage(store, project.userId, { limit: 2 });
    expect(first.webhooks.map((w) => w.id)).toEqual(ids.slice(0, 2));
    expect(first.next).toBe(ids[1]);
    const second = await listWebhookPage(store, project.userId, { after: first.next, limit: 2 });
    expect(second.webhooks.map((w) => w.id)).toEqual(ids.slice(2, 4));
    const last = await listWebhookPage(store, project.userId, { after: second.next, limit: 2 });
    expect(last).toEqual({ webhooks: [expect.objectContaining({ id: ids[4] })] });
    await expect(
      listWebhookPage(store, project.userId, { after: 'ffffffffffffffffffffffff', limit: 2 }),
    ).rejects.toThrow(UnknownCursor);
    // Removing one makes room for one.
    expect(await store.removeWebhook(project.userId, ids[0]!)).toBe(true);
    expect((await add()).id).toMatch(/^[0-9a-f]{24}$/);
  });

  it('cuts a post off at its deadline however the receiver trickles, and claims only for a free place', async () => {
    const slow = await trickling(100);
    // A store of its own: nothing else here is due while its places are counted.
    const own = new SqliteStore({ path: ':memory:' });
    await own.init();
    try {
      const deadlineMs = 1_000;
      const started = performance.now();
      const outcome = await postWebhook(slow.url, '{}', {}, { targets: loopback, deadlineMs });
      const took = performance.now() - started;
      expect(outcome).toEqual({
        ok: false,
        error: `no complete answer within ${deadlineMs} ms (WEBHOOK_DEADLINE_MS); the request was cut off`,
      });
      expect(took).toBeGreaterThanOrEqual(deadlineMs - 5);
      await expect.poll(slow.open).toBe(0);

      // Three users' deliveries to it, one place: one is claimed and posted, the others stay due
      // for any sender (another replica takes them at once, not after this one's claim ends).
      for (const name of ['place-a', 'place-b', 'place-c']) {
        const { id: userId } = await own.createUser(name);
        await own.addWebhook({ userId, targetUrl: slow.url, projectUrl: null, format: 'json', secret: 'pwhs_x' });
        await announceFailure({ userId, url: `https://${name}.example/` } as ProjectRecord, `u-${name}`, own);
      }
      const sender = createWebhookSender({
        ...senderSettings,
        store: own,
        logger,
        targets: loopback,
        secrets: noKey,
        concurrency: 1,
        deadlineMs,
      });
      expect(await sender.fill()).toBe(1);
      expect(await sender.fill()).toBe(0);
      const others = await own.claimDeliveries(new Date(), 10, claimLeaseMs(deadlineMs));
      expect(others).toHaveLength(2);
      await sender.drain();
      // Cut off at its deadline, recorded to be tried again.
      const [posted] = await own.claimDeliveries(new Date(Date.now() + 3_600_000), 10, 1_000);
      expect(posted!.lastError).toMatch(/no complete answer within 1000 ms/);
    } finally {
      await slow.close();
      await own.close();
    }
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
