import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditResultSchema, compareResultSchema, errorEnvelopeSchema, formatApiDateTime } from '@perfwatch/common';
import { SqliteStore } from '@perfwatch/gateway';
import {
  DEFAULT_HEAVY_READS,
  HEAVY_READ_PEAK_BYTES,
  YOUNG_GENERATION_BYTES,
} from '../../gateway/src/snapshots/heavy-reads.ts';
import { peakRssMb, resetPeakRss, rssMb } from '../../bench/process-stats.ts';
import { readAtOnce, seedLargestResults, type ReadEnd } from '../support/largest-results.ts';
import { spawnGateway, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats } from '../support/test-services.ts';

// A real gateway process (`perfwatch gateway` on the embedded store, V8's young generation as its
// image sets it) serving two snapshots that hold the largest result it accepts from an agent
// (16 MiB of JSON) in every cell. Sixteen compares (24 results each) and sixteen audits (12 each,
// 192 MB of JSON) are asked at once, four times its places, so that reads without a limit would
// hold more than the bound allows; its RSS, read from /proc, stays within what its places for
// heavy reads allow over what it held after one small read: MAX_HEAVY_READS (4) × 32 MiB, plus
// the young generation any load grows (heavy-reads.ts), and below its container's memory limit.
// bench/heavy-reads.ts measures the same with more rows.

const MiB = 1024 * 1024;
const READS = 4 * DEFAULT_HEAVY_READS;
const dates = [new Date('2026-11-01T10:00:00Z'), new Date('2026-11-02T10:00:00Z')];
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let dir: string;
let gateway: { process: PerfwatchProcess; url: string };
let token: string;
let result: Buffer;
let paths: { compare: string; audit: string; oneCell: string };

/** The gateway's memory limit as deploy/k8s ships it, in MiB. */
async function shippedLimitMb(): Promise<number> {
  const manifest = await readFile(join(import.meta.dirname, '../../deploy/k8s/base/gateway/deployment.yaml'), 'utf8');
  return Number(/limits:\s*\{[^}]*memory:\s*(\d+)Mi\s*\}/.exec(manifest)![1]);
}

beforeAll(async () => {
  nats = await isolatedNats();
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-heavy-reads-'));
  const store = new SqliteStore({ path: join(dir, 'perfwatch.sqlite') });
  await store.init();
  const seeded = await seedLargestResults(store, dates);
  await store.close();
  token = seeded.token;
  result = seeded.result.json;
  const url = encodeURIComponent(seeded.url);
  const [from, to] = dates.map(formatApiDateTime);
  paths = {
    compare: `/v1/compare?url=${url}&from=${from}&to=${to}`,
    audit: `/v1/audit?url=${url}&date=${from}`,
    oneCell: '&device=mobile&location=london',
  };
  gateway = await spawnGateway({
    NATS_URL: nats.url,
    PERFWATCH_DATA_DIR: dir,
    MONGODB_URI: 'mongodb://127.0.0.1:1/',
    NODE_OPTIONS: '--max-semi-space-size=16',
  });
});

afterAll(async () => {
  await gateway?.process.stop('SIGTERM');
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `path` asked READS times at once; the gateway's RSS before (after one small read) and at its peak. */
async function atOnce(path: string): Promise<{ ends: ReadEnd[]; baselineMb: number; peakMb: number }> {
  const pid = gateway.process.child.pid!;
  const warm = await readAtOnce(gateway.url, token, [paths.compare + paths.oneCell, paths.audit + paths.oneCell]);
  expect(warm.map((end) => end.status)).toEqual([200, 200]);
  // The cell's result as stored, whole, under the audit result's additions.
  const {
    crux: _crux,
    date: _date,
    elementCount: _count,
    ...lighthouse
  } = auditResultSchema.parse(warm[1]!.body).mobile!.london!.lighthouse;
  expect(lighthouse).toEqual(JSON.parse(result.toString('utf8')));
  const baselineMb = await rssMb(pid);
  await resetPeakRss(pid);
  const ends = await readAtOnce(
    gateway.url,
    token,
    Array.from({ length: READS }, () => path),
  );
  return { ends, baselineMb, peakMb: await peakRssMb(pid) };
}

/** Every read answered in full, or refused in the envelope with a time to come back; at least one per place answered. */
function expectAnsweredOrRefused(ends: ReadEnd[]): void {
  for (const end of ends) {
    if (end.status === 200) continue;
    expect(end.status).toBe(503);
    expect(Number(end.retryAfter)).toBeGreaterThan(0);
    expect(errorEnvelopeSchema.parse(end.body).status).toBe('SERVICE_UNAVAILABLE');
  }
  expect(ends.filter((end) => end.status === 200).length).toBeGreaterThanOrEqual(DEFAULT_HEAVY_READS);
}

describe('heavy reads of the largest results', () => {
  const boundMb = (DEFAULT_HEAVY_READS * HEAVY_READ_PEAK_BYTES + YOUNG_GENERATION_BYTES) / MiB;

  it(`${READS} compares at once stay within the places' memory`, { timeout: 300_000 }, async () => {
    const { ends, baselineMb, peakMb } = await atOnce(paths.compare);
    expectAnsweredOrRefused(ends);
    for (const end of ends.filter((e) => e.status === 200))
      expect(compareResultSchema.parse(end.body).cells).toHaveLength(12);
    expect(peakMb - baselineMb).toBeLessThanOrEqual(boundMb);
    expect(peakMb).toBeLessThan(await shippedLimitMb());
  });

  it(`${READS} audits at once stay within the places' memory`, { timeout: 300_000 }, async () => {
    const { ends, baselineMb, peakMb } = await atOnce(paths.audit);
    expectAnsweredOrRefused(ends);
    // Each answer whole and the same: twelve results of 16 MiB and the audit result around them,
    // none of them handed back before the client had it.
    const answered = ends.filter((e) => e.status === 200);
    expect(answered[0]!.bytes).toBeGreaterThan(12 * (result.byteLength - 1));
    expect(new Set(answered.map((e) => `${e.bytes} ${e.sha256}`)).size).toBe(1);
    expect(peakMb - baselineMb).toBeLessThanOrEqual(boundMb);
    expect(peakMb).toBeLessThan(await shippedLimitMb());
  });
});
