/**
 * What `PRAGMA synchronous = FULL` costs the embedded store's writes against NORMAL (what it
 * had before): the same writes, timed one by one, in stores of each kind side by side on the
 * same disk, the kinds alternating round by round. FULL syncs the WAL at every commit, so a
 * write the API acknowledged is on the disk before it is answered.
 *   BENCH_ONLY=durability npm run bench        (or: node bench/sqlite-durability.ts)
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { receivedRun, SqliteStore } from '@perfwatch/gateway';
import type { NewLocationSnapshot, ProjectRecord } from '../gateway/src/store/store.ts';
import type { Device } from '@perfwatch/common';
import { buildLocationSnapshot } from '../gateway/src/updates/snapshot-builder.ts';
import { loadLeanLhr } from '../test/support/lhr-fixtures.ts';

type Mode = 'normal' | 'full';

export interface DurabilityFigures {
  rounds: number;
  perRound: number;
  dir: string;
  writes: Array<{ write: string; normal: Times; full: Times }>;
}

interface Times {
  medianMs: number;
  p95Ms: number;
}

const WRITES = ['createUpdate', 'setUpdateProgress', 'saveSnapshot'] as const;
type Write = (typeof WRITES)[number];

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)]!;

/** A sync update's snapshot as the update service hands it over: mobile and desktop, one location. */
async function cells(): Promise<NewLocationSnapshot[]> {
  return Promise.all(
    (['mobile', 'desktop'] as Device[]).map((device) =>
      buildLocationSnapshot(device, 'london', [
        receivedRun({
          jobId: 'bench',
          agentId: 'bench',
          location: 'london',
          device,
          runIndex: 0,
          startedAt: new Date().toISOString(),
          lighthouseMs: 6_000,
          lhr: loadLeanLhr(device),
        }),
      ]),
    ),
  );
}

/** One round: a fresh store of `mode`, `perRound` of each write, each timed alone. */
async function round(
  mode: Mode,
  dir: string,
  perRound: number,
  results: NewLocationSnapshot[],
): Promise<Record<Write, number[]>> {
  const store = new SqliteStore({ path: join(dir, `${mode}-${randomUUID()}.sqlite`), synchronous: mode });
  await store.init();
  const times: Record<Write, number[]> = { createUpdate: [], setUpdateProgress: [], saveSnapshot: [] };
  const timed = async (write: Write, f: () => Promise<unknown>) => {
    const started = performance.now();
    await f();
    times[write].push(performance.now() - started);
  };
  try {
    const user = await store.createUser('bench');
    const project: ProjectRecord = await store.addProject({
      userId: user.id,
      url: 'https://bench.example/',
      domain: 'bench.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    for (let i = 0; i < perRound; i++) {
      const id = randomUUID();
      await timed('createUpdate', () =>
        store.createUpdate({
          id,
          userId: user.id,
          projectId: project.id,
          url: project.url,
          devices: ['mobile', 'desktop'],
          locations: ['london'],
          updateType: 'manual',
          runs: 1,
        }),
      );
      await timed('setUpdateProgress', () =>
        store.setUpdateProgress(id, [{ device: 'mobile', location: 'london', done: 1, total: 1 }]),
      );
      await timed('saveSnapshot', () =>
        store.saveSnapshot({
          project,
          updateId: id,
          date: new Date(Date.UTC(2026, 0, 1) + i * 60_000),
          updateType: 'manual',
          results,
        }),
      );
    }
  } finally {
    await store.close();
  }
  return times;
}

export async function measureDurability(rounds = 6, perRound = 40): Promise<DurabilityFigures> {
  // The disk the data directory would be on by default: not a tmpfs, where a sync costs nothing.
  const dir = await mkdtemp(join(process.env['BENCH_DURABILITY_DIR'] ?? tmpdir(), 'perfwatch-durability-'));
  const results = await cells();
  const all: Record<Mode, Record<Write, number[]>> = {
    normal: { createUpdate: [], setUpdateProgress: [], saveSnapshot: [] },
    full: { createUpdate: [], setUpdateProgress: [], saveSnapshot: [] },
  };
  try {
    for (let r = 0; r < rounds; r++)
      for (const mode of (r % 2 === 0 ? ['normal', 'full'] : ['full', 'normal']) as Mode[]) {
        const times = await round(mode, dir, perRound, results);
        for (const write of WRITES) all[mode][write].push(...times[write]);
      }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const summary = (xs: number[]): Times => ({ medianMs: quantile(xs, 0.5), p95Ms: quantile(xs, 0.95) });
  return {
    rounds,
    perRound,
    dir,
    writes: WRITES.map((write) => ({ write, normal: summary(all.normal[write]), full: summary(all.full[write]) })),
  };
}

/** The section of bench/results.md. */
export function durabilitySection(f: DurabilityFigures): string[] {
  const ms = (x: number) => `${x.toFixed(2)} ms`;
  return [
    `## SQLite durability (embedded store: synchronous FULL against NORMAL; ${f.rounds} alternating rounds of ${f.perRound} of each write, each timed alone)`,
    '',
    '| write | NORMAL median | FULL median | FULL − NORMAL | NORMAL p95 | FULL p95 |',
    '|---|---|---|---|---|---|',
    ...f.writes.map(
      ({ write, normal, full }) =>
        `| ${write} | ${ms(normal.medianMs)} | ${ms(full.medianMs)} | ${ms(full.medianMs - normal.medianMs)} | ${ms(normal.p95Ms)} | ${ms(full.p95Ms)} |`,
    ),
    '',
    `FULL syncs the WAL at every commit (NORMAL only at checkpoints), so an acknowledged write outlives a power loss. saveSnapshot is a sync update's snapshot (mobile and desktop, one location, lean Lighthouse results as stored); createUpdate is an async update accepted; setUpdateProgress is the bookkeeping write made after each run. The stores are files in ${f.dir.replace(/perfwatch-durability-.*$/, '')} (the machine's disk, where a sync is real; BENCH_DURABILITY_DIR puts them elsewhere).`,
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(durabilitySection(await measureDurability()).join('\n'));
}
