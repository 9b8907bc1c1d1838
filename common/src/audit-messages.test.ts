import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { auditSubject, decodeJob, decodeReply, encodeJob, encodeReply, type AuditReply } from './audit-messages.ts';

describe('v1 audit messages', () => {
  it('puts each location on its own subject', () => {
    expect(auditSubject('sao_paulo')).toBe('perfwatch.audit.v1.sao_paulo');
  });

  it('round-trips a job and rejects one that breaks the contract', () => {
    const job = { jobId: 'j1', updateId: 'u1', url: 'https://example.com/', device: 'mobile', location: 'tokyo', runIndex: 0, timeoutMs: 1000 } as const;
    expect(decodeJob(encodeJob(job))).toEqual(job);
    expect(() => decodeJob(Buffer.from(JSON.stringify({ ...job, device: 'tablet' })))).toThrow();
    expect(() => decodeJob(Buffer.from(JSON.stringify({ ...job, url: 'file:///etc/passwd' })))).toThrow();
    expect(() => decodeJob(Buffer.from('{not json'))).toThrow();
  });

  it('compresses a full Lighthouse reply well below NATS\'s 1 MB default payload', async () => {
    const lhr = loadLhr('mobile', 1);
    const reply: AuditReply = { ok: true, result: { jobId: 'j', agentId: 'a', location: 'london', device: 'mobile', runIndex: 0, startedAt: new Date().toISOString(), lighthouseMs: 9000, lhr } };
    const data = await encodeReply(reply);
    expect(data.byteLength).toBeLessThan(JSON.stringify(lhr).length / 3);
    expect(data.byteLength).toBeLessThan(256 * 1024);
    const back = await decodeReply(data, 'gzip');
    expect(back).toEqual(reply);
  });

  it('decodes an error reply, and refuses a reply that is neither', async () => {
    const reply: AuditReply = { ok: false, jobId: 'j', error: { code: 'PAGE_LOAD_FAILED', message: 'DNS failed', retryable: false } };
    expect(await decodeReply(await encodeReply(reply), 'gzip')).toEqual(reply);
    await expect(decodeReply(Buffer.from(JSON.stringify({ ok: 'maybe' })), undefined)).rejects.toThrow();
  });
});
