import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { CALM_CONDITIONS } from '../../test/support/new-cells.ts';
import { gzipSync } from 'node:zlib';
import {
  auditSubject,
  MAX_REPLY_INFLATED_BYTES,
  ReplyRefused,
  runConditionsSchema,
  replyMismatch,
  type AuditJob,
  type AuditReply,
} from './audit-messages.ts';
import { decodeJob, decodeReply, encodeJob, encodeReply, encodeReplyParts, receiveReply } from './audit-codec.ts';

describe('v1 audit messages', () => {
  it('puts each location on its own subject', () => {
    expect(auditSubject('sao_paulo')).toBe('perfwatch.audit.v1.sao_paulo');
  });

  it('round-trips a job and rejects one that breaks the contract', () => {
    const job = {
      jobId: 'j1',
      updateId: 'u1',
      url: 'https://example.com/',
      device: 'mobile',
      location: 'tokyo',
      runIndex: 0,
      timeoutMs: 1000,
    } as const;
    expect(decodeJob(encodeJob(job))).toEqual(job);
    expect(() => decodeJob(Buffer.from(JSON.stringify({ ...job, device: 'tablet' })))).toThrow();
    expect(() => decodeJob(Buffer.from(JSON.stringify({ ...job, url: 'file:///etc/passwd' })))).toThrow();
    expect(() => decodeJob(Buffer.from('{not json'))).toThrow();
  });

  it("compresses a full Lighthouse reply well below NATS's 1 MB default payload", async () => {
    const lhr = loadLhr('mobile', 1);
    const reply: AuditReply = {
      ok: true,
      result: {
        jobId: 'j',
        agentId: 'a',
        location: 'london',
        device: 'mobile',
        runIndex: 0,
        startedAt: new Date().toISOString(),
        lighthouseMs: 9000,
        lhr,
      },
    };
    const data = await encodeReply(reply);
    expect(data.byteLength).toBeLessThan(JSON.stringify(lhr).length / 3);
    expect(data.byteLength).toBeLessThan(256 * 1024);
    const back = await decodeReply(data, 'gzip');
    expect(back).toEqual(reply);
  });

  it('decodes an error reply, and refuses a reply that is neither', async () => {
    const reply: AuditReply = {
      ok: false,
      jobId: 'j',
      error: { code: 'PAGE_LOAD_FAILED', message: 'DNS failed', retryable: false },
    };
    expect(await decodeReply(await encodeReply(reply), 'gzip')).toEqual(reply);
    await expect(decodeReply(Buffer.from(JSON.stringify({ ok: 'maybe' })), undefined)).rejects.toThrow();
  });

  it('refuses a gzip bomb before it inflates past the limit, and bytes that are not gzip or JSON', async () => {
    // About 1 MB of gzip (members of 16 MiB of spaces each) that would inflate to 1 GiB.
    const member = gzipSync(Buffer.alloc(16 * 1024 * 1024, 0x20), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 64 }, () => member));
    expect(bomb.byteLength).toBeLessThan(2_000_000);
    const before = process.memoryUsage().arrayBuffers;
    await expect(decodeReply(bomb, 'gzip')).rejects.toThrow(
      new ReplyRefused(`the reply inflates past ${MAX_REPLY_INFLATED_BYTES} bytes`),
    );
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(2 * MAX_REPLY_INFLATED_BYTES);
    await expect(decodeReply(Buffer.from('not gzip'), 'gzip')).rejects.toThrow(/not gzip/);
    await expect(decodeReply(gzipSync('{"ok":'), 'gzip')).rejects.toThrow('the reply is not JSON');
  });

  it('bounds every field an agent sends: ids, timestamps, and failure messages cut at 2,000 characters', async () => {
    const ok = (result: Record<string, unknown>) =>
      encodeReply({
        ok: true,
        result: {
          jobId: 'j',
          agentId: 'a',
          location: 'london',
          device: 'mobile',
          runIndex: 0,
          startedAt: new Date().toISOString(),
          lighthouseMs: 1,
          lhr: loadLhr('mobile', 1),
          ...result,
        },
      } as AuditReply);
    await expect(decodeReply(await ok({ agentId: 'x'.repeat(10_000) }), 'gzip')).rejects.toThrow(/result\.agentId/);
    await expect(decodeReply(await ok({ agentId: 'evil\n{"level":60}' }), 'gzip')).rejects.toThrow(/agentId/);
    await expect(decodeReply(await ok({ jobId: 'j'.repeat(201) }), 'gzip')).rejects.toThrow(/result\.jobId/);
    await expect(decodeReply(await ok({ startedAt: 'x'.repeat(1000) }), 'gzip')).rejects.toThrow(/startedAt/);
    const long = await decodeReply(
      await encodeReply({ ok: false, error: { code: 'INTERNAL', message: 'm'.repeat(1_000_000), retryable: true } }),
      'gzip',
    );
    expect(!long.ok && long.error.message.length).toBe(2_001);
  });

  it('refuses a run over a bound of what is stored of it: its security facts, and what its digest keeps', async () => {
    const run = {
      jobId: 'j',
      agentId: 'a',
      location: 'london',
      device: 'mobile',
      runIndex: 0,
      startedAt: new Date().toISOString(),
      lighthouseMs: 1,
      lhr: loadLhr('mobile', 1),
    } as const;
    const security = { https: true, tlsProtocol: 'TLSv1.3', certDaysLeft: 61, certValid: true, headers: [] };
    const whole = (result: Record<string, unknown>) =>
      encodeReply({ ok: true, result: { ...run, ...result } } as AuditReply).then((data) => decodeReply(data, 'gzip'));
    await expect(whole({ security })).resolves.toMatchObject({ ok: true });
    const over = [
      [{ security: { ...security, tlsProtocol: 'T'.repeat(15 * 1024 * 1024) } }, 'result.security.tlsProtocol'],
      [{ security: { ...security, headers: ['x'.repeat(65)] } }, 'result.security.headers.0'],
      [
        { security: { ...security, headers: Array.from({ length: 33 }, () => 'x-frame-options') } },
        'result.security.headers',
      ],
      [{ security: { ...security, certDaysLeft: 1e12 } }, 'result.security.certDaysLeft'],
      [{ lhr: { ...run.lhr, lighthouseVersion: 'v'.repeat(101) } }, 'result.lhr.lighthouseVersion'],
      [
        { lhr: { ...run.lhr, finalDisplayedUrl: `https://a.test/${'p'.repeat(8_192)}` } },
        'result.lhr.finalDisplayedUrl',
      ],
      [{ lhr: { ...run.lhr, runWarnings: ['w'.repeat(2_001)] } }, 'result.lhr.runWarnings.0'],
      // A category's id becomes the name of a KPI record.
      [
        { lhr: { ...run.lhr, categories: { ...run.lhr.categories, ['c'.repeat(65)]: { id: 'c', score: 1 } } } },
        'kpis.6.kpi',
      ],
    ] as const;
    for (const [result, path] of over) {
      const refused = whole(result);
      await expect(refused, path).rejects.toThrow(ReplyRefused);
      await expect(refused, path).rejects.toThrow(path);
    }
    // The digest of a two-part reply carries the security facts, held to the same bounds.
    const digested = await encodeReplyParts(
      { ok: true, result: { ...run, security: { ...security, tlsProtocol: 'T'.repeat(100_000) } } },
      undefined,
      { plainDigest: true },
    );
    const layout = { contentEncoding: 'gzip', parts: String(digested.parts), digestEncoding: 'identity' };
    await expect(receiveReply(digested.data, layout)).rejects.toThrow(/result\.security\.tlsProtocol/);
  });

  it('binds a reply to the job it answers', () => {
    const job: AuditJob = {
      jobId: 'u.mobile.tokyo.0',
      updateId: 'u',
      url: 'https://example.com/',
      device: 'mobile',
      location: 'tokyo',
      runIndex: 0,
      timeoutMs: 1000,
    };
    const run = {
      jobId: job.jobId,
      agentId: 'a',
      location: 'tokyo',
      device: 'mobile',
      runIndex: 0,
      startedAt: new Date().toISOString(),
      lighthouseMs: 1,
      lhr: loadLhr('mobile', 1),
    } as const;
    expect(replyMismatch(job, { ok: true, result: run })).toBeNull();
    expect(replyMismatch(job, { ok: true, result: { ...run, jobId: 'other' } })).toBe(
      'a run whose jobId is "other", not "u.mobile.tokyo.0"',
    );
    expect(replyMismatch(job, { ok: true, result: { ...run, device: 'desktop' } })).toMatch(/device is "desktop"/);
    expect(replyMismatch(job, { ok: true, result: { ...run, runIndex: 1 } })).toMatch(/runIndex is 1/);
    expect(
      replyMismatch(job, { ok: false, jobId: 'other', error: { code: 'INTERNAL', message: '', retryable: true } }),
    ).toMatch(/failure of job other/);
    expect(replyMismatch(job, { ok: false, error: { code: 'BAD_JOB', message: '', retryable: false } })).toBeNull();
  });
});

describe('a run’s conditions', () => {
  it('take a benchmark spread past 1 (readings that disagree wildly), and refuse an absurd one', () => {
    expect(runConditionsSchema.safeParse({ ...CALM_CONDITIONS, benchmarkSpread: 1.064 }).success).toBe(true);
    expect(runConditionsSchema.safeParse({ ...CALM_CONDITIONS, benchmarkSpread: 1e9 }).success).toBe(false);
  });
});
