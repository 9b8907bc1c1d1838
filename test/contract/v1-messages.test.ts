import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  agentAnnouncementSchema,
  auditJobSchema,
  digestedReplySchema,
  receiveReply,
  auditReplySchema,
  decodeAnnouncement,
  decodeJob,
  decodeReply,
  encodeAnnouncement,
  encodeJob,
  encodeReply,
  replyMismatch,
} from '@perfwatch/common';

// Golden v1 messages. Within v1 these files are only ever added to: an agent and a gateway on
// different v1 minor versions must keep understanding each other.
const dir = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/contract/v1');
const golden = (name: string): unknown => JSON.parse(readFileSync(join(dir, name), 'utf8'));

describe('NATS contract v1', () => {
  it('has a schema for every golden file', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual([
      'agent-announcement-with-instance.json',
      'agent-announcement-with-running.json',
      'agent-announcement.json',
      'audit-job-retry.json',
      'audit-job-with-auth.json',
      'audit-job-with-digest.json',
      'audit-job-with-flow.json',
      'audit-job-with-login-origin.json',
      'audit-job-with-plain-digest.json',
      'audit-job.json',
      'audit-reply-digest.json',
      'audit-reply-error-minimal.json',
      'audit-reply-error-with-agent.json',
      'audit-reply-error.json',
      'audit-reply-flow-digest.json',
      'audit-reply-ok-with-conditions.json',
      'audit-reply-ok-with-security.json',
      'audit-reply-ok.json',
    ]);
  });

  it.each([
    'audit-job.json',
    'audit-job-retry.json',
    'audit-job-with-auth.json',
    'audit-job-with-digest.json',
    'audit-job-with-plain-digest.json',
    'audit-job-with-login-origin.json',
    'audit-job-with-flow.json',
  ])('decodes the golden job %s, and encodes it back unchanged', (name) => {
    const job = auditJobSchema.parse(golden(name));
    expect(job).toEqual(golden(name));
    expect(decodeJob(encodeJob(job))).toEqual(job);
  });

  it('takes the origin a login step types into as an origin only: no path, no other scheme', () => {
    const job = golden('audit-job-with-login-origin.json') as { auth: { login: Array<Record<string, unknown>> } };
    const withOrigin = (origin: string) => ({
      ...job,
      auth: { login: [{ action: 'fill', selector: '#password', value: 'x', origin }] },
    });
    expect(auditJobSchema.safeParse(withOrigin('https://sso.example/')).success).toBe(true);
    expect(auditJobSchema.safeParse(withOrigin('http://localhost:8081')).success).toBe(true);
    for (const bad of ['https://sso.example/login', 'https://sso.example/?next=1', 'ftp://sso.example', 'sso.example'])
      expect(auditJobSchema.safeParse(withOrigin(bad)).success, bad).toBe(false);
  });

  it("decodes the v1.2 announcement with the agent's instance, and a v1.1 one without it", () => {
    const announcement = agentAnnouncementSchema.parse(golden('agent-announcement-with-instance.json'));
    expect(decodeAnnouncement(encodeAnnouncement(announcement))).toEqual(
      golden('agent-announcement-with-instance.json'),
    );
    expect(agentAnnouncementSchema.parse(golden('agent-announcement.json')).instance).toBeUndefined();
  });

  it('decodes the v1.4 announcement naming the jobs the agent runs, and earlier ones without them', () => {
    const announcement = agentAnnouncementSchema.parse(golden('agent-announcement-with-running.json'));
    expect(announcement.running).toEqual(['3d364521-024f-4f82-badd-116eac5f8328.desktop.tokyo.0']);
    expect(decodeAnnouncement(encodeAnnouncement(announcement))).toEqual(
      golden('agent-announcement-with-running.json'),
    );
    expect(agentAnnouncementSchema.parse(golden('agent-announcement-with-instance.json')).running).toBeUndefined();
    // Bounded: a region cannot grow a gateway's memory through one announcement.
    expect(
      agentAnnouncementSchema.safeParse({ ...announcement, running: Array.from({ length: 65 }, (_, i) => `job-${i}`) })
        .success,
    ).toBe(false);
  });

  it('reads the first part of a v1.5 two-part reply: the run with its digest, no result', async () => {
    const reply = digestedReplySchema.parse(golden('audit-reply-digest.json'));
    expect(reply).toEqual(golden('audit-reply-digest.json'));
    const head = gzipSync(JSON.stringify(golden('audit-reply-digest.json')));
    const received = await receiveReply(Buffer.concat([head, gzipSync('{}')]), {
      contentEncoding: 'gzip',
      parts: String(head.byteLength),
    });
    expect(received.ok && 'lighthouseGzip' in received && received.result.digest.kpis.length).toBeGreaterThan(5);
    // A v1.0 job asks for no digest: the flag is optional for good.
    expect(auditJobSchema.parse(golden('audit-job.json')).digest).toBeUndefined();
  });

  it('reads the plain first part of a v1.6 two-part reply as it reads the gzipped one of v1.5', async () => {
    const head = Buffer.from(JSON.stringify(golden('audit-reply-digest.json')));
    const received = await receiveReply(Buffer.concat([head, gzipSync('{}')]), {
      contentEncoding: 'gzip',
      parts: String(head.byteLength),
      digestEncoding: 'identity',
    });
    expect(received).toEqual({ ...(golden('audit-reply-digest.json') as object), lighthouseGzip: expect.any(Buffer) });
    // A v1.5 job asks for the gzipped digest: the flag is optional for good.
    expect(auditJobSchema.parse(golden('audit-job-with-digest.json')).plainDigest).toBeUndefined();
  });

  it("reads a v1.8 flow's run: the steps' digests, then each step's result as Perfwatch-Step-Parts says", async () => {
    const head = Buffer.from(JSON.stringify(golden('audit-reply-flow-digest.json')));
    const results = ['{"step":1}', '{"step":2}', '{"step":3}'].map((json) => gzipSync(json));
    const received = await receiveReply(Buffer.concat([head, ...results]), {
      contentEncoding: 'gzip',
      parts: String(head.byteLength),
      digestEncoding: 'identity',
      stepParts: results.map((r) => r.byteLength).join(','),
    });
    if (!received.ok || !('stepGzips' in received)) throw new Error('not a flow reply');
    expect(received.result.steps!.map((s) => `${s.kind} ${s.name}`)).toEqual([
      'navigate product',
      'timespan add to cart',
      'snapshot cart',
    ]);
    expect(received.stepGzips!.map((g) => gunzipSync(g).toString())).toEqual([
      '{"step":1}',
      '{"step":2}',
      '{"step":3}',
    ]);
    expect(received.lighthouseGzip).toEqual(received.stepGzips![0]);
    // It answers the golden flow job, and no job without that flow.
    const job = auditJobSchema.parse(golden('audit-job-with-flow.json'));
    expect(replyMismatch(job, received)).toBeNull();
    const { flow: _flow, ...navigation } = job;
    expect(replyMismatch(navigation, received)).toMatch(/flow steps for a job that has no flow/);
    // A v1.7 job has no flow: the field is optional for good.
    expect(auditJobSchema.parse(golden('audit-job-with-plain-digest.json')).flow).toBeUndefined();
  });

  it('decodes the golden agent announcement, and encodes it back unchanged', () => {
    const announcement = agentAnnouncementSchema.parse(golden('agent-announcement.json'));
    expect(decodeAnnouncement(encodeAnnouncement(announcement))).toEqual(golden('agent-announcement.json'));
    // A v1.0 job (no excludeAgents) is still a job: the field is optional for good.
    expect(auditJobSchema.parse(golden('audit-job.json')).excludeAgents).toBeUndefined();
  });

  it.each([
    'audit-reply-ok.json',
    'audit-reply-ok-with-security.json',
    'audit-reply-ok-with-conditions.json',
    'audit-reply-error.json',
    'audit-reply-error-minimal.json',
    'audit-reply-error-with-agent.json',
  ])('decodes the golden reply %s', async (name) => {
    const reply = auditReplySchema.parse(golden(name));
    expect(await decodeReply(await encodeReply(reply), 'gzip')).toEqual(golden(name));
    // Plain JSON (a reply without Content-Encoding) is read too.
    expect(await decodeReply(Buffer.from(JSON.stringify(golden(name))), undefined)).toEqual(golden(name));
  });

  it("reads a v1.2 run's conditions, with or without the count of runs that overlapped it", () => {
    const reply = auditReplySchema.parse(golden('audit-reply-ok-with-conditions.json'));
    expect(reply.ok && reply.result.conditions).toMatchObject({
      benchmarkIndex: 2431,
      baselineBenchmarkIndex: 2460,
      concurrentRuns: 0,
      overlappingRuns: 1,
    });
    const earlier = golden('audit-reply-ok-with-conditions.json') as {
      result: { conditions: Record<string, unknown> };
    };
    delete earlier.result.conditions['overlappingRuns'];
    const parsed = auditReplySchema.parse(earlier);
    expect(parsed.ok && parsed.result.conditions?.overlappingRuns).toBeUndefined();
  });

  it('keeps fields it does not know, so additive changes pass through older gateways', () => {
    const ok = golden('audit-reply-ok.json') as { result: { lhr: Record<string, unknown> } };
    ok.result.lhr['someFutureField'] = { x: 1 };
    const parsed = auditReplySchema.parse(ok);
    expect(parsed.ok && parsed.result.lhr['someFutureField']).toEqual({ x: 1 });
  });

  it('reads an error code a later v1 agent may add', () => {
    const reply = auditReplySchema.parse({
      ok: false,
      error: { code: 'SOMETHING_NEW', message: 'from the future', retryable: true },
    });
    expect(!reply.ok && reply.error.code).toBe('SOMETHING_NEW');
  });

  it('rejects a reply that breaks the contract', () => {
    expect(auditReplySchema.safeParse({ ok: true }).success).toBe(false);
    expect(
      auditReplySchema.safeParse({ ok: false, error: { code: 'PAGE_LOAD_FAILED', message: 'no retryable flag' } })
        .success,
    ).toBe(false);
    expect(auditJobSchema.safeParse({ ...(golden('audit-job.json') as object), location: 'mars' }).success).toBe(false);
  });
});
