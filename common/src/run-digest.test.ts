import { describe, expect, it } from 'vitest';
import { gunzipSync, gzipSync } from 'node:zlib';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { ReplyRefused, type AuditReply } from './audit-messages.ts';
import { encodeReplyParts, receiveReply } from './audit-codec.ts';
import { BUDGET_KEYS, checkCell, type BudgetKey } from './budgets.ts';
import { lighthouseKpis, LIGHTHOUSE_KPI_VERSION } from './lighthouse-kpis.ts';
import { pageSourceKpis, savingsKpis } from './page-kpis.ts';
import { digestKpis, digestRun, digestSkeleton, runDigestSchema } from './run-digest.ts';
import { extractElementCount, extractRunMetrics } from './run-metrics.ts';

/** Every budget a navigation measures (INP needs a flow's timespan, and is given per step). */
const everyBudget = {
  budgets: Object.fromEntries(
    Object.keys(BUDGET_KEYS)
      .filter((key) => key !== 'inp')
      .map((key) => [key, 1]),
  ) as Record<BudgetKey, number>,
  maxRegression: {},
};

describe('run digests', () => {
  it.each(['mobile', 'desktop'] as const)(
    'read the same numbers as the whole %s result: key metrics, every budget, element count, KPI records',
    (device) => {
      const lhr = loadLhr(device, 2);
      const digest = runDigestSchema.parse(JSON.parse(JSON.stringify(digestRun(lhr))));
      expect(extractRunMetrics(digestSkeleton(digest))).toEqual(extractRunMetrics(lhr));
      expect(checkCell(digestSkeleton(digest), everyBudget)).toEqual(checkCell(lhr, everyBudget));
      expect(checkCell(digestSkeleton(digest), everyBudget).every((c) => c.actual !== null)).toBe(true);
      expect(digest.elementCount).toBe(extractElementCount(lhr));
      expect(digestKpis(digest)).toEqual([...lighthouseKpis(lhr), ...pageSourceKpis(lhr), ...savingsKpis(lhr)]);
      // A few kilobytes for a result of hundreds.
      expect(JSON.stringify(digest).length).toBeLessThan(6_000);
      expect(JSON.stringify(lhr).length).toBeGreaterThan(100_000);
    },
  );

  it('are bounded, and KPI records of other definitions are not taken', () => {
    const digest = digestRun(loadLhr('mobile', 1));
    expect(
      runDigestSchema.safeParse({ ...digest, kpis: Array.from({ length: 33 }, () => digest.kpis[0]) }).success,
    ).toBe(false);
    expect(
      runDigestSchema.safeParse({ ...digest, lhr: { ...digest.lhr, runWarnings: ['x'.repeat(2_001)] } }).success,
    ).toBe(false);
    expect(
      runDigestSchema.safeParse({
        ...digest,
        lhr: {
          ...digest.lhr,
          audits: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`a${i}`, { id: `a${i}` }])),
        },
      }).success,
    ).toBe(false);
    expect(
      runDigestSchema.safeParse({
        ...digest,
        kpis: [{ section: 'LIGHTHOUSE', kpi: 'x', data: { deep: { nested: 1 } } }],
      }).success,
    ).toBe(false);
    const withField = (value: unknown) =>
      runDigestSchema.safeParse({ ...digest, kpis: [{ section: 'LIGHTHOUSE', kpi: 'x', data: { field: value } }] })
        .success;
    expect([1.5, null, true, 'x'.repeat(500)].map(withField)).toEqual([true, true, true, true]);
    expect(['x'.repeat(501), [1], undefined].map(withField)).toEqual([false, false, false]);
    const withData = (data: unknown) =>
      runDigestSchema.safeParse({ ...digest, kpis: [{ section: 'LIGHTHOUSE', kpi: 'x', data }] }).success;
    const fields = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]));
    expect([fields(64), fields(65), { ['n'.repeat(65)]: 1 }, [1, 2], null].map(withData)).toEqual([
      true,
      false,
      false,
      false,
      false,
    ]);
    expect(digestKpis({ ...digest, kpiVersion: LIGHTHOUSE_KPI_VERSION + 1 })).toBeNull();
  });
});

describe('two-part replies (v1.5)', () => {
  const lhr = loadLhr('mobile', 1);
  const reply: Extract<AuditReply, { ok: true }> = {
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

  it('carry the digest first and the result as the gzip a store keeps, read without inflating it', async () => {
    const { data, parts } = await encodeReplyParts(reply);
    const received = await receiveReply(data, { contentEncoding: 'gzip', parts: String(parts) });
    if (!received.ok || !('lighthouseGzip' in received)) throw new Error('not a two-part reply');
    const { lhr: _lhr, ...run } = reply.result;
    expect(received.result).toEqual({ ...run, digest: JSON.parse(JSON.stringify(digestRun(lhr))) });
    expect(JSON.parse(gunzipSync(received.lighthouseGzip).toString('utf8'))).toEqual(lhr);
    // The digest part is a small share of the message.
    expect(parts).toBeLessThan(data.byteLength / 5);
  });

  it('carry the digest as plain JSON when the job asks (v1.6), said by the Perfwatch-Digest-Encoding header', async () => {
    const { data, parts } = await encodeReplyParts(reply, undefined, { plainDigest: true });
    const head = data.subarray(0, parts);
    expect(JSON.parse(head.toString('utf8')).result.digest).toEqual(JSON.parse(JSON.stringify(digestRun(lhr))));
    const layout = { contentEncoding: 'gzip', parts: String(parts) };
    const received = await receiveReply(data, { ...layout, digestEncoding: 'identity' });
    if (!received.ok || !('lighthouseGzip' in received)) throw new Error('not a two-part reply');
    expect(JSON.parse(gunzipSync(received.lighthouseGzip).toString('utf8'))).toEqual(lhr);
    const refusal = (digestEncoding: string | undefined, bytes = data) =>
      receiveReply(bytes, { ...layout, digestEncoding }).then(
        () => 'read',
        (error: unknown) => (error instanceof ReplyRefused ? error.message : 'thrown'),
      );
    // Plain bytes said to be gzip, an encoding no version has, and plain bytes past the bound.
    expect(await refusal(undefined)).toMatch(/not gzip/);
    expect(await refusal('br')).toMatch(/encoding of no v1 version/);
    const huge = Buffer.concat([Buffer.alloc(300 * 1024, 0x20), head]);
    const tail = data.subarray(parts);
    expect(
      await receiveReply(Buffer.concat([huge, tail]), {
        contentEncoding: 'gzip',
        parts: String(huge.byteLength),
        digestEncoding: 'identity',
      }).catch((error: Error) => error.message),
    ).toMatch(/digest is over/);
  });

  it('are refused by name when their parts do not hold together', async () => {
    const { data, parts } = await encodeReplyParts(reply);
    const refused = (bytes: Uint8Array, header: string) =>
      receiveReply(bytes, { contentEncoding: 'gzip', parts: header }).then(
        () => null,
        (error: unknown) => error,
      );
    for (const header of ['0', String(data.byteLength), '-3', '12abc', '99999999999'])
      expect(await refused(data, header)).toBeInstanceOf(ReplyRefused);
    const head = data.subarray(0, parts);
    expect(
      String(await refused(Buffer.concat([head, Buffer.from('{"not":"gzip"}'.repeat(4))]), String(parts))),
    ).toMatch(/result is not gzip/);
    // A trailer claiming more than a result may inflate to.
    const bomb = Buffer.from(gzipSync(Buffer.from('{}')));
    bomb.writeUInt32LE(0xffffffff, bomb.byteLength - 4);
    expect(String(await refused(Buffer.concat([head, bomb]), String(parts)))).toMatch(/inflates past/);
    // A failure is never in two parts, and the digest must match the contract.
    const failure = gzipSync(
      Buffer.from(JSON.stringify({ ok: false, error: { code: 'INTERNAL', message: 'x', retryable: true } })),
    );
    expect(
      String(await refused(Buffer.concat([failure, gzipSync(Buffer.from('{}'))]), String(failure.byteLength))),
    ).toMatch(/one part/);
    const noDigest = gzipSync(Buffer.from(JSON.stringify({ ok: true, result: { ...reply.result, lhr: undefined } })));
    expect(
      String(await refused(Buffer.concat([noDigest, gzipSync(Buffer.from('{}'))]), String(noDigest.byteLength))),
    ).toMatch(/digest/);
  });
});
