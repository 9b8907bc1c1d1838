import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import {
  DEVICES,
  extractRunMetrics,
  LOCATIONS,
  MAX_REPLY_INFLATED_BYTES,
  type LighthouseResult,
} from '@perfwatch/common';
import { createAdmin, ResultBytes, type Store } from '@perfwatch/gateway';
import { loadLhr } from './lhr-fixtures.ts';

/**
 * The largest result the gateway takes from an agent: a real Lighthouse result whose
 * network-requests table is grown until its JSON is MAX_REPLY_INFLATED_BYTES (16 MiB) less a few
 * bytes. Its rows repeat within gzip's window, so it compresses to about 0.2 MB and fits one
 * message of NATS's default max_payload (1 MB): an agent can send it over the shipped NATS.
 */
function largestResult(): { json: Buffer; gzip: Buffer } {
  const lhr: LighthouseResult = loadLhr('mobile', 1);
  const items: unknown[] = [];
  lhr.audits['network-requests']!.details = { type: 'table', headings: [], items };
  const row = (i: number) => {
    const j = i % 128;
    return {
      url: `https://cdn.example/assets/${j}.js`,
      transferSize: 1000 + j,
      resourceSize: 3000 + 2 * j,
      resourceType: 'Script',
      startTime: 3 * j,
      endTime: 3 * j + 12,
    };
  };
  // Each row adds its JSON and a comma; the first none.
  let room = MAX_REPLY_INFLATED_BYTES - Buffer.byteLength(JSON.stringify(lhr)) + 1;
  for (let i = 0; ; i++) {
    const size = Buffer.byteLength(JSON.stringify(row(i))) + 1;
    if (size > room) break;
    items.push(row(i));
    room -= size;
  }
  const json = Buffer.from(JSON.stringify(lhr));
  if (json.byteLength > MAX_REPLY_INFLATED_BYTES) throw new Error('the largest result came out larger than allowed');
  return { json, gzip: gzipSync(json) };
}

const LARGE_PROJECT = 'https://largest-results.example/';

/**
 * A user, a project of every location, and `dates.length` snapshots of it, each holding the
 * largest result the gateway accepts in every cell (2 devices × 6 locations): what a hostile
 * agent could have stored, and /v1/compare then reads 24 of.
 */
export async function seedLargestResults(
  store: Store,
  dates: readonly Date[],
): Promise<{ token: string; url: string; result: { json: Buffer; gzip: Buffer } }> {
  const admin = createAdmin(store);
  const { token } = await admin.createUser('largest-results');
  const project = await admin.addProject('largest-results', LARGE_PROJECT, { locations: [...LOCATIONS] });
  const result = largestResult();
  const measured = loadLhr('mobile', 1);
  for (const [n, date] of dates.entries()) {
    await store.saveSnapshot({
      project,
      updateId: `largest-${n}`,
      date,
      updateType: 'manual',
      results: DEVICES.flatMap((device) =>
        LOCATIONS.map((location) => ({
          device,
          location,
          median: 1,
          runs: [{ ...extractRunMetrics(measured), agentId: 'largest' }],
          lighthouse: ResultBytes.fromGzip(result.gzip),
          lighthouseVersion: measured.lighthouseVersion,
          measured,
          crux: { url: null },
          elementCount: null,
          kpis: [],
        })),
      ),
    });
  }
  return { token, url: project.url, result };
}

/** How one read ended: its status, Retry-After, the bytes of its answer and their digest, and the answer itself when small. */
export interface ReadEnd {
  status: number;
  retryAfter: string | null;
  bytes: number;
  /** SHA-256 of the answer, hex: answers to the same read must be the same bytes. */
  sha256: string;
  /** The answer, parsed, when it is under SMALL_ANSWER (a compare's, an error's, a one-cell audit's). */
  body?: unknown;
}

/** Answers kept and parsed whole: up to one cell of these snapshots (16 MiB of result). */
const SMALL_ANSWER = 20 * 1024 * 1024;

/**
 * `paths` asked of `base` at once, each answer read to its end as it arrives (never held: an
 * audit of these snapshots is 192 MB of JSON), as clients that read promptly do.
 */
export function readAtOnce(base: string, token: string, paths: readonly string[]): Promise<ReadEnd[]> {
  return Promise.all(
    paths.map(async (path) => {
      const res = await fetch(`${base}${path}`, { headers: { Authorization: token } });
      const head: Buffer[] = [];
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of res.body!) {
        if (bytes < SMALL_ANSWER) head.push(Buffer.from(chunk));
        hash.update(chunk);
        bytes += chunk.byteLength;
      }
      const end: ReadEnd = {
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        bytes,
        sha256: hash.digest('hex'),
      };
      return bytes < SMALL_ANSWER ? { ...end, body: JSON.parse(Buffer.concat(head).toString('utf8')) as unknown } : end;
    }),
  );
}
