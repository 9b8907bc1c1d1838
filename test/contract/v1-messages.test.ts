import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { auditJobSchema, auditReplySchema, decodeJob, decodeReply, encodeJob, encodeReply } from '@perfwatch/common';

// Golden v1 messages. Within v1 these files are only ever added to: an agent and a gateway on
// different v1 minor versions must keep understanding each other.
const dir = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/contract/v1');
const golden = (name: string): unknown => JSON.parse(readFileSync(join(dir, name), 'utf8'));

describe('NATS contract v1', () => {
  it('has a schema for every golden file', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual(['audit-job.json', 'audit-reply-error-minimal.json', 'audit-reply-error.json', 'audit-reply-ok-with-security.json', 'audit-reply-ok.json']);
  });

  it('decodes the golden job, and encodes it back unchanged', () => {
    const job = auditJobSchema.parse(golden('audit-job.json'));
    expect(job).toEqual(golden('audit-job.json'));
    expect(decodeJob(encodeJob(job))).toEqual(job);
  });

  it.each(['audit-reply-ok.json', 'audit-reply-ok-with-security.json', 'audit-reply-error.json', 'audit-reply-error-minimal.json'])('decodes the golden reply %s', async (name) => {
    const reply = auditReplySchema.parse(golden(name));
    expect(await decodeReply(await encodeReply(reply), 'gzip')).toEqual(golden(name));
    // Plain JSON (a reply without Content-Encoding) is read too.
    expect(await decodeReply(Buffer.from(JSON.stringify(golden(name))), undefined)).toEqual(golden(name));
  });

  it('keeps fields it does not know, so additive changes pass through older gateways', () => {
    const ok = golden('audit-reply-ok.json') as { result: { lhr: Record<string, unknown> } };
    ok.result.lhr['someFutureField'] = { x: 1 };
    const parsed = auditReplySchema.parse(ok);
    expect(parsed.ok && parsed.result.lhr['someFutureField']).toEqual({ x: 1 });
  });

  it('reads an error code a later v1 agent may add', () => {
    const reply = auditReplySchema.parse({ ok: false, error: { code: 'SOMETHING_NEW', message: 'from the future', retryable: true } });
    expect(!reply.ok && reply.error.code).toBe('SOMETHING_NEW');
  });

  it('rejects a reply that breaks the contract', () => {
    expect(auditReplySchema.safeParse({ ok: true }).success).toBe(false);
    expect(auditReplySchema.safeParse({ ok: false, error: { code: 'PAGE_LOAD_FAILED', message: 'no retryable flag' } }).success).toBe(false);
    expect(auditJobSchema.safeParse({ ...(golden('audit-job.json') as object), location: 'mars' }).success).toBe(false);
  });
});
