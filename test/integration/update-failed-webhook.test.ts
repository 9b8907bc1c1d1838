import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunFailure, startAgent, type Agent } from '@perfwatch/agent';
import { verifyWebhookSignature, webhookPayloadSchema } from '@perfwatch/common';
import { createApiClient } from '@perfwatch/client';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// update.failed through the real path: an async update whose every run fails (the page does not
// load) is failed by the JetStream queue on a real nats-server, stored in the MongoDB-wire
// server, and announced to the owner's webhook, signed.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let receiver: Server;
const received: Array<{ body: string; signature: string }> = [];
const URL_ = 'https://broken.example/';

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        body: Buffer.concat(chunks).toString('utf8'),
        signature: String(req.headers['x-perfwatch-signature']),
      });
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: { PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8', WEBHOOK_POLL_MS: 100, PUBLIC_URL: 'https://pw.example' },
  });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({
      fail: () => new RunFailure('PAGE_LOAD_FAILED', 'ERRORED_DOCUMENT_REQUEST: status 500', false),
    }),
    logger: silentLogger,
    agentId: 'london-broken',
  });
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('update.failed', () => {
  it("announces an async update that failed to its owner's webhook, once, signed, with the reason", async () => {
    const { token } = await gateway.admin.createUser('ops');
    await gateway.admin.addProject('ops', URL_, { locations: ['london'], runs: 1 });
    const client = createApiClient({ server: gateway.url, token });
    const { created } = await client.webhooks({
      targetUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`,
      project: URL_,
    });
    const id = await client.startUpdate({ url: URL_, device: 'mobile' });
    const status = await client.waitForUpdate(id, { pollMs: 100, timeoutMs: 30_000 });
    expect(status.status).toBe('failed');
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(1);
    const [delivery] = received;
    expect(verifyWebhookSignature(created!.secret, delivery!.body, delivery!.signature)).toBe(true);
    expect(webhookPayloadSchema.parse(JSON.parse(delivery!.body))).toEqual({
      event: 'update.failed',
      project: URL_,
      device: null,
      location: null,
      snapshotDate: null,
      checks: [],
      dashboardUrl: `https://pw.example/#/project?${new URLSearchParams({ url: URL_ })}`,
      reason: status.reason,
      updateId: id,
    });
    // Recorded once the receiver's answer is in, a moment after it has the body.
    await expect
      .poll(async () => (await client.webhooks()).webhooks[0]!.deliveries.map((d) => [d.event, d.status]), {
        timeout: 10_000,
      })
      .toEqual([['update.failed', 'delivered']]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(received).toHaveLength(1);
  });
});
