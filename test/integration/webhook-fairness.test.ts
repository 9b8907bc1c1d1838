import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '@perfwatch/common';
import { createSecretBox, gatewayConfigWith, type MongoStore, type ProjectRecord } from '@perfwatch/gateway';
import { createWebhookOutbox } from '../../gateway/src/alerts/webhook-outbox.ts';
import { addWebhook, type WebhookRules } from '../../gateway/src/alerts/webhook-registry.ts';
import { startWebhookSender } from '../../gateway/src/alerts/webhook-sender.ts';
import { createWebhookTargets } from '../../gateway/src/alerts/webhook-targets.ts';
import { webhookSenderOptionsOf } from '../../gateway/src/config.ts';
import { measuredWait } from '../support/measured-wait.ts';
import { silentLogger, testStore } from '../support/test-services.ts';

// One user's receiver that never finishes its answer must not hold up another user's
// deliveries: the sender as the gateway runs it (startWebhookSender), on the MongoDB-wire server
// the other webhook suites use, posting to real HTTP receivers on loopback.

/** A byte of the answer every this long: an idle timeout of the deadline's length never fires. */
const TRICKLE_MS = 2_000;

let store: MongoStore;
let fast: Server;
let slow: Server;
const fastReceived: Array<{ at: number; body: string; signature: string }> = [];
/** A's receiver: when each request came and when its connection ended, and how many were open at most. */
const slowRequests: Array<{ openedAt: number; closedAt?: number }> = [];
let slowOpenMax = 0;
const rules: WebhookRules = {
  targets: createWebhookTargets('127.0.0.0/8'),
  secrets: createSecretBox({ key: randomBytes(32).toString('base64') }),
  maxPerUser: 20,
};

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};
let fastUrl: string;
let slowUrl: string;

beforeAll(async () => {
  store = await testStore();
  fast = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      fastReceived.push({
        at: Date.now(),
        body: Buffer.concat(chunks).toString('utf8'),
        signature: String(req.headers['x-perfwatch-signature']),
      });
      res.end();
    });
  });
  // Answers 200 at once, then a byte every TRICKLE_MS, and never ends.
  slow = createServer((req, res) => {
    const request: { openedAt: number; closedAt?: number } = { openedAt: Date.now() };
    slowRequests.push(request);
    slowOpenMax = Math.max(slowOpenMax, slowRequests.filter((r) => r.closedAt === undefined).length);
    req.resume();
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.flushHeaders();
    const timer = setInterval(() => res.write('.'), TRICKLE_MS);
    res.on('close', () => {
      clearInterval(timer);
      request.closedAt = Date.now();
    });
  });
  fastUrl = await listen(fast);
  slowUrl = await listen(slow);
});

afterAll(async () => {
  slow?.closeAllConnections();
  await Promise.all([fast, slow].map((s) => new Promise((resolve) => s?.close(resolve))));
  await store?.close();
});

async function userWithHooks(name: string, targets: string[]): Promise<{ project: ProjectRecord; secrets: string[] }> {
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
  const secrets: string[] = [];
  for (const targetUrl of targets)
    secrets.push(
      (await addWebhook(store, rules, { userId: user.id, targetUrl, projectUrl: null, format: 'json' })).secret,
    );
  return { project, secrets };
}

const outbox = () => createWebhookOutbox({ store, logger: silentLogger, publicUrl: 'https://pw.example' });
const announce = (project: ProjectRecord, updateId: string) =>
  outbox().updateFailed({ userId: project.userId, url: project.url, updateId, reason: 'every run failed' });

async function deliveriesOf(project: ProjectRecord) {
  const hooks = await store.listWebhooks(project.userId);
  return (await Promise.all(hooks.map((h) => store.listDeliveries(h.id, 10)))).flat();
}

describe('webhook delivery under a receiver that never finishes', () => {
  it("does not let user A's trickling receiver delay user B's delivery; A's is cut at the deadline and kept for a retry", async () => {
    const b = await userWithHooks('fair-b', [`${fastUrl}/b`]);
    const a = await userWithHooks('fair-a', [`${slowUrl}/a1`, `${slowUrl}/a2`]);
    const sender = (deadlineMs: number) =>
      startWebhookSender({
        ...webhookSenderOptionsOf(gatewayConfigWith({})),
        store,
        logger: silentLogger,
        targets: rules.targets,
        secrets: rules.secrets,
        pollMs: 100,
        deadlineMs,
        concurrency: 2,
        perUser: 1,
        // A's deliveries, once failed, do not come back while this test looks.
        retry: { firstMs: 600_000, maxMs: 600_000, giveUpAfterMs: 86_400_000 },
      });

    // How long B's delivery takes here, alone: enqueued to recorded delivered.
    const quiet = sender(30_000);
    const startedAt = Date.now();
    await announce(b.project, 'baseline');
    await expect
      .poll(async () => (await deliveriesOf(b.project)).map((d) => d.status), { timeout: 60_000, interval: 20 })
      .toEqual(['delivered']);
    const baselineMs = Date.now() - startedAt;
    await quiet.stop();
    // The deadline far above what a delivery takes on this machine now, and above the trickle.
    const deadlineMs = Math.max(3 * TRICKLE_MS, 8 * baselineMs);
    const patience = measuredWait(baselineMs, 1, { slack: 20, floorMs: 30_000 }) + 2 * deadlineMs;

    const running = sender(deadlineMs);
    try {
      // A's event: one delivery per webhook of A's, both to the receiver that never finishes.
      await announce(a.project, 'a-event');
      await expect.poll(() => slowRequests.length, { timeout: patience, interval: 20 }).toBe(1);
      const first = slowRequests[0]!;
      // Its claim outlasts the post's deadline: no other replica takes it while it is in flight.
      const claimed = (await deliveriesOf(a.project)).map((d) => d.nextAttemptAt.getTime());
      expect(Math.max(...claimed)).toBeGreaterThan(first.openedAt + deadlineMs);

      // B's event, while A's post hangs: delivered before A's post is cut.
      await announce(b.project, 'b-event');
      await expect.poll(() => fastReceived.length, { timeout: patience, interval: 20 }).toBe(2);
      const bReceived = fastReceived[1]!;
      expect(first.closedAt ?? Infinity).toBeGreaterThan(bReceived.at);
      expect(verifyWebhookSignature(b.secrets[0]!, bReceived.body, bReceived.signature)).toBe(true);
      expect(JSON.parse(bReceived.body)).toMatchObject({ event: 'update.failed', updateId: 'b-event' });
      await expect
        .poll(async () => (await deliveriesOf(b.project)).map((d) => d.status), { timeout: patience, interval: 20 })
        .toEqual(['delivered', 'delivered']);

      // A's first post is cut at the deadline and recorded to be tried again; the place it held
      // goes to A's second delivery, so A never has more than one post in flight.
      await expect.poll(() => first.closedAt, { timeout: patience, interval: 20 }).toBeDefined();
      expect(first.closedAt! - first.openedAt).toBeGreaterThanOrEqual(deadlineMs - 1_000);
      await expect.poll(() => slowRequests.length, { timeout: patience, interval: 20 }).toBe(2);
      expect(slowRequests[1]!.openedAt).toBeGreaterThanOrEqual(first.closedAt!);
      const cutOff = `no complete answer within ${deadlineMs} ms (WEBHOOK_DEADLINE_MS); the request was cut off`;
      await expect
        .poll(async () => (await deliveriesOf(a.project)).map((d) => [d.status, d.attempts, d.lastError]), {
          timeout: patience,
          interval: 50,
        })
        .toEqual([
          ['pending', 1, cutOff],
          ['pending', 1, cutOff],
        ]);
      for (const d of await deliveriesOf(a.project)) expect(d.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
      expect(slowOpenMax).toBe(1);
    } finally {
      // Whatever happened, no post is left hanging on A's receiver (stop waits for those in flight).
      slow.closeAllConnections();
      await running.stop();
    }
  });
});
