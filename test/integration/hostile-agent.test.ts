import { gzipSync } from 'node:zlib';
import { connect } from '@nats-io/transport-node';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  agentAnnounceSubject,
  auditQueueGroup,
  auditResultSchema,
  auditSubject,
  decodeJob,
  encodeAnnouncement,
  encodeReply,
  HEADERS,
  MAX_REPLY_INFLATED_BYTES,
  overviewResponseSchema,
  PERFWATCH_VERSION,
  type AuditJob,
  type AuditRunResult,
} from '@perfwatch/common';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createNatsDispatcher, MAX_AGENTS_PER_LOCATION } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Agents are run by other operators: a hostile one, on a real nats-server, answers tokyo's jobs
// with a gzip bomb, another job's run, oversized fields and a security string as large as a
// reply can carry, and announces 10,000 invented agents and the retirement of an honest one.
// The gateway stays up with bounded memory, the run fails with a reason naming the agent (stored
// with the snapshot), nothing of the refused reply is stored, and the update goes on with
// frankfurt's honest agent.

type Mode = 'bomb' | 'other-job' | 'huge-agent-id' | 'huge-security';
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let honestConn: NatsConnection;
let hostile: NatsConnection;
let honest: Agent;
let token: string;
let mode: Mode = 'bomb';
const PAGE = 'https://shop.example/';

// About 1 MB of gzip that inflates to 1 GiB (members of 16 MiB of spaces each).
const member = gzipSync(Buffer.alloc(16 * 1024 * 1024, 0x20), { level: 9 });
const bomb = Buffer.concat(Array.from({ length: 64 }, () => member));

/**
 * A whole reply (as agents before v1.5 send, and any agent may) whose TLS protocol fills all a
 * reply may inflate to, 16 MiB, but for the rest of the reply: a result the schema takes, and
 * fields that all fit their bounds.
 */
async function hugeSecurityReply(run: AuditRunResult): Promise<Uint8Array> {
  const lhr = {
    lighthouseVersion: '13.5.0',
    fetchTime: run.startedAt,
    finalDisplayedUrl: PAGE,
    audits: {},
    categories: {},
  };
  const security = { https: true, tlsProtocol: '', certDaysLeft: 61, certValid: true, headers: [] };
  const rest = JSON.stringify({ ok: true, result: { ...run, lhr, security } }).length;
  security.tlsProtocol = 'T'.repeat(MAX_REPLY_INFLATED_BYTES - rest);
  return encodeReply({ ok: true, result: { ...run, lhr, security } });
}

function replyHeaders(agentId: string) {
  const h = natsHeaders();
  h.set(HEADERS.contentEncoding, 'gzip');
  h.set(HEADERS.agentId, agentId);
  return h;
}

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url, replyTimeoutMs: 5_000 });
  honestConn = await connect({ servers: nats.url });
  honest = startAgent({
    nc: honestConn,
    location: 'frankfurt',
    runner: fixtureRunner({ delayMs: 5 }),
    logger: silentLogger,
    agentId: 'fra-honest',
  });
  hostile = await connect({ servers: nats.url });
  hostile.subscribe(auditSubject('tokyo'), {
    queue: auditQueueGroup('tokyo'),
    callback: (_error, msg) => {
      const job: AuditJob = decodeJob(msg.data);
      void (async () => {
        if (mode === 'bomb') return msg.respond(bomb, { headers: replyHeaders('tyo-evil') });
        const run = {
          jobId: job.jobId,
          agentId: 'tyo-evil',
          location: job.location,
          device: job.device,
          runIndex: job.runIndex,
          startedAt: new Date().toISOString(),
          lighthouseMs: 1,
          lhr: loadLhr(job.device, 1),
        };
        if (mode === 'huge-security')
          return msg.respond(await hugeSecurityReply(run), { headers: replyHeaders('tyo-evil') });
        if (mode === 'other-job')
          return msg.respond(
            await encodeReply({ ok: true, result: { ...run, jobId: `${job.updateId}.desktop.tokyo.7`, runIndex: 7 } }),
            { headers: replyHeaders('tyo-evil') },
          );
        return msg.respond(await encodeReply({ ok: true, result: { ...run, agentId: 'x'.repeat(1_000_000) } }), {
          headers: replyHeaders('x'.repeat(1_000)),
        });
      })();
    },
  });
  hostile.publish(
    agentAnnounceSubject('tokyo'),
    encodeAnnouncement({
      agentId: 'tyo-evil',
      location: 'tokyo',
      version: PERFWATCH_VERSION,
      capacity: 1,
      busy: 0,
      state: 'ready',
      intervalMs: 60_000,
    }),
  );
  await hostile.flush();
  ({ token } = await gateway.admin.createUser('alice'));
  await gateway.admin.addProject('alice', PAGE, { locations: ['frankfurt', 'tokyo'], runs: 1 });
  await vi.waitFor(() =>
    expect(gateway.runtime.agents.agents('frankfurt')?.map((a) => a.agentId)).toEqual(['fra-honest']),
  );
});

afterAll(async () => {
  await honest?.stop();
  await honestConn?.drain();
  await hostile?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

const job = (over: Partial<AuditJob> = {}): AuditJob => ({
  jobId: `u-${Math.random()}.mobile.tokyo.0`,
  updateId: 'u',
  url: PAGE,
  device: 'mobile',
  location: 'tokyo',
  runIndex: 0,
  timeoutMs: 5_000,
  ...over,
});

describe('a hostile agent', () => {
  it("a gzip bomb is refused before it inflates, naming the agent, and the gateway's memory stays flat", async () => {
    mode = 'bomb';
    const dispatcher = createNatsDispatcher({ nc: gateway.nc, logger: silentLogger });
    const rssBefore = process.memoryUsage().rss;
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => dispatcher.dispatch(job(), { timeoutMs: 10_000, requestId: 'bomb' })),
    );
    const grownMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ ok: false, agentId: 'tyo-evil', error: { code: 'BAD_REPLY' } });
      expect(!outcome.ok && outcome.error.message).toBe(
        'agent tyo-evil of tokyo sent a reply that was refused: the reply inflates past 16777216 bytes',
      );
    }
    // Eight bombs inflated in full would be 8 GiB; each stops at 16 MiB.
    expect(grownMb).toBeLessThan(400);
  });

  it('a run of another job is not taken for this one', async () => {
    mode = 'other-job';
    const dispatcher = createNatsDispatcher({ nc: gateway.nc, logger: silentLogger });
    const outcome = await dispatcher.dispatch(job(), { timeoutMs: 10_000, requestId: 'other' });
    expect(outcome).toMatchObject({ ok: false, agentId: 'tyo-evil', error: { code: 'BAD_REPLY' } });
    expect(!outcome.ok && outcome.error.message).toMatch(
      /agent tyo-evil of tokyo sent a reply that was refused: it answers with a run whose jobId is "u\.desktop\.tokyo\.7"/,
    );
  });

  it('oversized fields are refused, and an id that is no agent id is not repeated', async () => {
    mode = 'huge-agent-id';
    const dispatcher = createNatsDispatcher({ nc: gateway.nc, logger: silentLogger });
    const outcome = await dispatcher.dispatch(job(), { timeoutMs: 10_000, requestId: 'huge' });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'BAD_REPLY' } });
    expect(outcome).not.toHaveProperty('agentId');
    expect(!outcome.ok && outcome.error.message).toMatch(
      /^an agent of tokyo sent a reply that was refused: the reply does not match the v1 contract \(result\.agentId: /,
    );
    expect(!outcome.ok && outcome.error.message.length).toBeLessThan(500);
  });

  it('10,000 invented agents and a forged goodbye change nothing for the honest agents', async () => {
    for (let i = 0; i < 10_000; i++)
      hostile.publish(
        agentAnnounceSubject('tokyo'),
        encodeAnnouncement({
          agentId: `tyo-fake-${i}`,
          location: 'tokyo',
          version: PERFWATCH_VERSION,
          capacity: 1000,
          busy: 0,
          state: 'ready',
          intervalMs: 600_000,
        }),
      );
    // The honest frankfurt agent retired by an announcement on tokyo's subject, and on its own
    // subject by a process that is not it (no instance, or another one).
    hostile.publish(
      agentAnnounceSubject('tokyo'),
      encodeAnnouncement({
        agentId: 'fra-honest',
        location: 'tokyo',
        version: PERFWATCH_VERSION,
        capacity: 1,
        busy: 0,
        state: 'stopping',
        intervalMs: 5_000,
      }),
    );
    hostile.publish(
      agentAnnounceSubject('frankfurt'),
      encodeAnnouncement({
        agentId: 'fra-honest',
        location: 'frankfurt',
        version: PERFWATCH_VERSION,
        capacity: 1,
        busy: 0,
        state: 'stopping',
        intervalMs: 5_000,
      }),
    );
    hostile.publish(
      agentAnnounceSubject('frankfurt'),
      encodeAnnouncement({
        agentId: 'fra-honest',
        instance: 'forged-instance-0000',
        location: 'frankfurt',
        version: PERFWATCH_VERSION,
        capacity: 1,
        busy: 0,
        state: 'stopping',
        intervalMs: 5_000,
      }),
    );
    await hostile.flush();
    await vi.waitFor(() => expect(gateway.runtime.agents.agents('tokyo')!.length).toBe(MAX_AGENTS_PER_LOCATION), {
      timeout: 10_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(gateway.runtime.agents.agents('tokyo')!.length).toBe(MAX_AGENTS_PER_LOCATION);
    expect(gateway.runtime.agents.agents('frankfurt')!.map((a) => a.agentId)).toEqual(['fra-honest']);
  });

  it('an update goes on with the honest agents: frankfurt measured, tokyo refused', async () => {
    mode = 'bomb';
    const res = await fetch(`${gateway.url}/v1/update?url=${encodeURIComponent(PAGE)}&device=mobile`, {
      headers: { Authorization: token },
    });
    expect(res.status).toBe(200);
    const result = auditResultSchema.parse(await res.json());
    expect(Object.keys(result.mobile ?? {})).toEqual(['frankfurt']);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
  });

  it('a reply with a 16 MiB security string is refused: the run records why, and nothing of it is stored', async () => {
    mode = 'huge-security';
    const get = (path: string) => fetch(`${gateway.url}${path}`, { headers: { Authorization: token } });
    const res = await get(`/v1/update?url=${encodeURIComponent(PAGE)}&device=mobile`);
    expect(res.status).toBe(200);
    const result = auditResultSchema.parse(await res.json());
    expect(Object.keys(result.mobile ?? {})).toEqual(['frankfurt']);
    const missing = [
      {
        device: 'mobile',
        location: 'tokyo',
        reason:
          'BAD_REPLY: agent tyo-evil of tokyo sent a reply that was refused: the reply does not match the v1 contract (result.security.tlsProtocol: Too big: expected string to have <=64 characters)',
      },
    ];
    expect(result.missing).toEqual(missing);

    // The snapshot as stored: why tokyo is missing, and no record of tokyo's run.
    const date = result.mobile!.frankfurt!.lighthouse.date;
    const stored = auditResultSchema.parse(
      await (await get(`/v1/audit?url=${encodeURIComponent(PAGE)}&date=${date}`)).json(),
    );
    expect(stored.missing).toEqual(missing);
    const day = date.slice(0, 10);
    const overview = await get(`/v1/overview?startDate=${day}&endDate=${day}`);
    const text = await overview.text();
    const records = overviewResponseSchema.parse(JSON.parse(text));
    expect(records.filter((r) => r.date === date).map((r) => r.location)).toContain('frankfurt');
    expect(records.filter((r) => r.location === 'tokyo')).toEqual([]);
    expect(text.length).toBeLessThan(1024 * 1024);
  });
});
