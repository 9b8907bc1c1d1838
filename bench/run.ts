/**
 * `npm run bench`: runs every benchmark and writes bench/results.md with the machine, the
 * date and each figure. Not part of `npm test`: figures are ratios measured side by side.
 * `BENCH_ONLY=repeatability,reads npm run bench` measures only those sections and keeps the
 * others as the last full run wrote them (each section says when it was measured).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measureUpdateOverhead } from './update-overhead.ts';
import { measureOverview, type OverviewFigures } from './overview-memory.ts';
import { measureDispatchScale } from './dispatch-scale.ts';
import { measureReadPath, type Load, type ReadPathFigures } from './read-path.ts';
import { measureAgentCapacity, type CapacityPhase } from './agent-capacity.ts';
import { measureRepeatability, repeatabilitySection } from './repeatability.ts';
import { flowAgreementSection, measureFlowAgreement } from './flow-agreement.ts';
import { measureStoredBytes, storedBytesSection } from './stored-bytes.ts';
import { durabilitySection, measureDurability } from './sqlite-durability.ts';
import { measureVerdicts, verdictsSection } from './verdicts.ts';
import { measureHeavyReads, type HeavyReadFigures, type HeavyReadRow } from './heavy-reads.ts';
import { measureSitemapDiscovery, sitemapDiscoverySection } from './sitemap-discovery.ts';
import { measureSiteScan, siteScanSection } from './site-scan.ts';
import { artifactBoundsNote, artifactSizesSection, measureArtifactSizes } from './artifact-sizes.ts';
import { artifactStreamingSection, measureArtifactStreamingLevels } from './artifact-streaming.ts';

/** Where the embedded server's peak RSS grew, level by level: what the flatness goal reads. */
const rssGrowth = (f: OverviewFigures) =>
  ` The ${f.store} server's peak RSS by level: ${f.levels.map((l) => `${l.peakRssMb.toFixed(0)} MB at ${l.records.toLocaleString('en')} records`).join(', ')}.`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const phaseRow = (name: string, p: CapacityPhase) =>
  `| ${name} | ${p.runsPerHourPerCore.toFixed(0)} | ${Math.round(p.medianLighthouseMs)} ms | ${p.chromePeakMb.toFixed(0)} MB | ${p.browsers} |`;
const load = (l: Load) =>
  `${l.requestsPerSecond.toFixed(1)} req/s, p50 ${Math.round(l.p50Ms)} ms, p99 ${Math.round(l.p99Ms)} ms`;

/** Each section: its name for BENCH_ONLY, the headings it writes, and how it is measured. */
const SECTIONS: Array<{ name: string; headings: string[]; measure: () => Promise<string[]> }> = [
  {
    name: 'overhead',
    headings: ['## Sync update overhead'],
    async measure() {
      const overhead = await measureUpdateOverhead(Number(process.env['BENCH_PAIRS'] ?? 5));
      return [
        '## Sync update overhead (fixture page, mobile, 1 location, 1 run)',
        '',
        '| figure | bare CLI | cold agent | warm agent |',
        '|---|---|---|---|',
        `| wall time, median of ${overhead.pairs} alternating rounds | ${Math.round(median(overhead.cliMs))} ms | ${Math.round(median(overhead.cold.updateMs))} ms | ${Math.round(median(overhead.warm.updateMs))} ms |`,
        `| agent's own Lighthouse run, median | — | ${Math.round(median(overhead.cold.agentLighthouseMs))} ms | ${Math.round(median(overhead.warm.agentLighthouseMs))} ms |`,
        `| update ÷ bare CLI (median of per-round ratios) | 1 | ${overhead.cold.updateOverCli.toFixed(3)} | ${overhead.warm.updateOverCli.toFixed(3)} |`,
        `| update ÷ agent's Lighthouse time | — | ${overhead.cold.updateOverAgentLighthouse.toFixed(3)} | ${overhead.warm.updateOverAgentLighthouse.toFixed(3)} |`,
        '',
        'The bare CLI runs with its defaults (full-page screenshot included) in a process of its own; agents skip the full-page screenshot, which is never stored.',
        '',
      ];
    },
  },
  {
    name: 'capacity',
    headings: ['## Agent capacity'],
    async measure() {
      const capacity = await measureAgentCapacity(Number(process.env['BENCH_CAPACITY_RUNS'] ?? 6));
      return [
        `## Agent capacity (fixture page, mobile, ${capacity.cores} runners on ${capacity.cores} cores, ${capacity.warm.runs} runs per phase)`,
        '',
        '| browser | runs per hour per core | Lighthouse run, median | Chrome peak memory per browser (PSS) | browsers used |',
        '|---|---|---|---|---|',
        phaseRow('warm (kept across runs)', capacity.warm),
        phaseRow('cold (launched per run)', capacity.cold),
        '',
      ];
    },
  },
  {
    name: 'repeatability',
    headings: ['## Repeatability', '## Agreement with stock Lighthouse'],
    measure: async () =>
      repeatabilitySection(
        await measureRepeatability(Number(process.env['BENCH_REPEAT_UPDATES'] ?? 10)),
        new Date().toISOString(),
      ),
  },
  {
    name: 'flows',
    headings: ['## User flows'],
    measure: async () =>
      flowAgreementSection(
        await measureFlowAgreement(
          Number(process.env['BENCH_FLOW_RUNS'] ?? 5),
          Number(process.env['BENCH_FLOW_WORK_MS'] ?? 120),
        ),
      ),
  },
  {
    name: 'verdicts',
    headings: ['## Run verdicts'],
    measure: async () => verdictsSection(await measureVerdicts(Number(process.env['BENCH_VERDICT_RUNS'] ?? 30))),
  },
  {
    name: 'stored-bytes',
    headings: ['## Stored bytes per run'],
    measure: async () => storedBytesSection(await measureStoredBytes()),
  },
  {
    name: 'durability',
    headings: ['## SQLite durability'],
    measure: async () => durabilitySection(await measureDurability()),
  },
  {
    name: 'scale',
    headings: ['## Dispatch and merge at scale'],
    async measure() {
      const scale = await measureDispatchScale(
        (process.env['BENCH_SCALE_LEVELS'] ?? '1,10,100,1000').split(',').map(Number),
      );
      return [
        '## Dispatch and merge at scale (responders answering after 200 ms; 6 locations × 2 devices × 3 runs per update)',
        '',
        '| concurrent updates | agents reply with | ideal | every run answered and merged | × ideal (goal ≤ 2) | every update stored and answered | × ideal | gateway CPU per update (goal ≤ 15 ms) | gateway peak RSS (goal ≤ 500 MB) | failed |',
        '|---|---|---|---|---|---|---|---|---|---|',
        ...scale.map(
          (l) =>
            `| ${l.concurrent} | ${l.replies === 'whole' ? 'whole results (before v1.5)' : 'digest + result apart (v1.6)'} | ${l.idealMs} ms | ${Math.round(l.dispatchedMs)} ms | ${l.dispatchedOverIdeal.toFixed(2)} | ${Math.round(l.ms)} ms | ${l.overIdeal.toFixed(2)} | ${l.cpuMsPerUpdate.toFixed(1)} ms | ${l.peakRssMb.toFixed(0)} MB | ${l.failed} |`,
        ),
        '',
        "Each level runs twice, one after the other, each time in a gateway process of its own (`perfwatch gateway` on the embedded store; young generation 2 × 16 MB as its image sets it; `MAX_RUNS_IN_FLIGHT` 600, the stand-in fleet's capacity, as an operator sets it for a fleet that size): first with agents that send whole results (as before v1.5: the gateway inflates, parses and digests every run), then with agents that send their digest and the result apart (v1.6, the digest as plain JSON: the gateway reads the digests and inflates only the representative results). The stand-in agents (6 locations × 4 agents of capacity 25) answer after 200 ms with a real Lighthouse result whose audit details are dropped (82 kB of JSON, 18.5 kB gzip), replaying bytes compressed beforehand so that they cost the machine next to nothing; the sync clients ask from a thread of their own. The ideal is the fleet's: runs per location ÷ 100 places × 200 ms. CPU is the gateway process's (all its threads, from /proc), less what the bench's /metrics scrapes cost it; peak RSS is its VmHWM, of which the gateway holds about 170 MB before any update (Node, its TypeScript loader, the code); heap and buffers are the highest of /metrics' samples every 250 ms (which also sets the resolution of \"every run answered\").",
        '',
        "What bounds the gateway's CPU at 1,000 v1.6 updates (a CPU profile of the gateway, `BENCH_CPU_PROF=dir node bench/dispatch-scale.ts 1000 parts`, 2026-11-25: 20.2 s on the CPU of 22.5 s sampled; the profiled run measured 21.1 ms per update, unprofiled runs of the same code 18.1–19.5 ms): garbage collection 3.6 s; the representative results' check, inflating each and scanning it as one JSON object, 3.3 s (zlib 1.9 s, the scan 1.4 s: each of the 12,000 cells' results is 82 kB of JSON); the embedded store's snapshot writes 2.3 s (SQLite's commits 1.4 s, which write each snapshot's results and records to its WAL and checkpoint it, the KPI inserts 0.4 s since they go 64 rows to a statement); reading the replies 2.2 s (JSON.parse and zod of the digests 1.4 s, of which zod 1.0 s since a KPI record's fields are checked in one pass; the digest is no longer inflated since v1.6, which was 0.7 s); NATS's protocol parsing 1.8 s; offering the jobs 1.4 s; writing the sync answers to sockets 1.5 s (a gigabyte: every update's 12 results); agents' announcements 0.9 s. Nothing left is a single cause: the check, the answers and the commit are each proportional to the bytes of the representative results, which a sync answer must carry and the check must read; 15 ms would take a result check in native code or answers that are not the results' JSON.",
        '',
      ];
    },
  },
  {
    name: 'reads',
    headings: ['## Read path'],
    async measure() {
      const given = process.env['BENCH_READ_SNAPSHOTS'] ? Number(process.env['BENCH_READ_SNAPSHOTS']) : undefined;
      const all = [await measureReadPath('embedded', given), await measureReadPath('mongo-wire')];
      const store = (r: ReadPathFigures) =>
        r.store === 'embedded' ? 'embedded (SQLite)' : process.env['BENCH_MONGODB_URI'] ? 'MongoDB' : 'FerretDB v1';
      return [
        '## Read path (10 connections; goal on the embedded store at 100,000 snapshots: ratio ≥ 0.8)',
        '',
        '| store | snapshots | KPI records | endpoint | gateway (autocannon) | the store directly, same reads | ratio | gateway CPU per request |',
        '|---|---|---|---|---|---|---|---|',
        ...all.flatMap((r) => [
          `| ${store(r)} | ${r.snapshots.toLocaleString('en')} | ${r.kpiRecords.toLocaleString('en')} | /v1/audit (one snapshot, one result) | ${load(r.audit.gateway)} | ${load(r.audit.raw)} | ${r.audit.ratio.toFixed(2)} | ${r.audit.gateway.cpuMsPerRequest?.toFixed(1)} ms |`,
          `| ${store(r)} | ${r.snapshots.toLocaleString('en')} | ${r.kpiRecords.toLocaleString('en')} | /v1/overview (one domain, one day: ${r.overviewRecordsPerRequest} records) | ${load(r.overview.gateway)} | ${load(r.overview.raw)} | ${r.overview.ratio.toFixed(2)} | ${r.overview.gateway.cpuMsPerRequest?.toFixed(1)} ms |`,
        ]),
        '',
        "Embedded: the direct side calls the same SqliteStore methods the routes call (findProject and findSnapshot for /v1/audit, streamKpis for /v1/overview) in the bench process, so the ratio is what HTTP, authentication, rate limiting and writing the answer add. Since 2026-11-25 a stored result is parsed only when something reads it as an object (a comparison, budgets), not for /v1/audit, which writes its bytes: the gateway went from 1,341 to 2,095 /v1/audit requests per second (p50 6 → 3 ms), and the store methods from 2,170 to 4,246 reads per second, so the ratio fell from 0.62 to 0.49. What bounds it (CPU profile of the gateway, `BENCH_CPU_PROF=dir node bench/read-path.ts embedded`): of its 0.6 ms of CPU per /v1/audit request, 0.24 ms is the store methods the direct side also runs (inflating the result, checking it is one JSON object, the SQLite reads); the rest is Node's HTTP server and Express (parsing the request, routing it through the middleware chain), writing the answer to its socket, authentication (a token lookup and its SHA-256, about 0.02 ms), the request's log line and its metrics. A ratio of 0.8 on a 0.24 ms store read would leave 0.06 ms per request for all of that, less than Node's request parsing and socket writes alone take in this profile (about 0.09 ms); /v1/overview, whose store work is larger, is at 0.85. FerretDB: the direct side issues the store's queries through the MongoDB driver; FerretDB v1 uses no index for filters other than `_id`, so every query scans its collection, both sides are bound by the database and the scale is kept small (see bench/read-path.ts). `BENCH_MONGODB_URI=mongodb://… npm run bench` runs 100,000 snapshots on a real MongoDB.",
        '',
      ];
    },
  },
  {
    name: 'overview',
    headings: ['## Overview streaming'],
    async measure() {
      const large = Number(process.env['BENCH_OVERVIEW_RECORDS'] ?? 1_000_000);
      // FerretDB scans its collection for every read: a million records there take a quarter of an hour.
      const stores: OverviewFigures[] = [
        await measureOverview('embedded', large),
        await measureOverview('mongo-wire', Number(process.env['BENCH_OVERVIEW_FERRETDB_RECORDS'] ?? 0)),
      ];
      const [first] = stores;
      const levels = first!.levels;
      const row = (f: OverviewFigures) => {
        const cells = levels
          .map((_, i) => f.levels[i])
          .map((l) =>
            l
              ? `${Math.round(l.recordsPerSecond).toLocaleString('en')} records/s (direct ${Math.round(l.directRecordsPerSecond).toLocaleString('en')}), peak RSS ${l.peakRssMb.toFixed(0)} MB`
              : 'not run (see below)',
          );
        const last = f.levels.at(-1)!;
        return `| ${f.store === 'embedded' ? 'embedded (SQLite, perfwatch start)' : 'MongoDB-wire (FerretDB v1, perfwatch gateway)'} | ${f.baselineRssMb.toFixed(0)} MB | ${cells.join(' | ')} | ${(last.peakRssMb / f.levels[0]!.peakRssMb).toFixed(2)} (${last.records.toLocaleString('en')} ÷ 10,000) |`;
      };
      return [
        `## Overview streaming (server process: old generation capped at ${first!.heapCapMb} MB, young generation 2 × 16 MB as the gateway image sets it; goal ≥ 100,000 records/s, peak RSS 1M ÷ 10k ≤ 1.1)`,
        '',
        `| store | RSS at start | ${levels.map((l) => `${l.records.toLocaleString('en')} records (${l.mb.toFixed(0)} MB)`).join(' | ')} | peak RSS, largest ÷ smallest |`,
        `|---|---|${levels.map(() => '---').join('|')}|---|`,
        ...stores.map(row),
        '',
        '"direct" is the same query read straight from the store in the bench process (node:sqlite; or the MongoDB driver decoding each document): the bound of what the server can stream. Records reach the client as JSON over HTTP. FerretDB v1 uses no index for these queries and scans its whole collection for each read, so there each level\'s records are added just before it is read, and the million-record level is left out by default (`BENCH_OVERVIEW_FERRETDB_RECORDS=1000000` runs it, about 15 minutes); `BENCH_MONGODB_URI` is not used here.' +
          rssGrowth(first!) +
          " Where the embedded server's growth between 10,000 and 100,000 records is (measured 2026-11-25 with `node bench/overview-memory.ts embedded`, peak RSS at 10k / 100k / 1M records): not V8's heap, since with the young generation at 1 MB it is 166 / 186 / 186 MB, and with the old generation also capped at 24 MB instead of 96 it is 142 / 170 / 171 MB; it is native memory outside the heap that reaches its size once and stays there, held in glibc's per-thread malloc arenas: with `MALLOC_ARENA_MAX=1` it is 159 / 175 / 175 MB, a ratio of 1.10. Not set in the images: one malloc arena would serialise the allocations of the thread pool's zlib work.",
        '',
      ];
    },
  },
  {
    name: 'heavy-reads',
    headings: ['## Heavy reads'],
    async measure() {
      const stores = [await measureHeavyReads('embedded'), await measureHeavyReads('mongo-wire')];
      const { resultMb, resultGzipKb } = stores[0]!;
      const row = (f: HeavyReadFigures, r: HeavyReadRow) =>
        `| ${f.store === 'embedded' ? 'embedded (SQLite)' : 'MongoDB-wire (FerretDB v1)'} | ${r.what === 'compare, alone' ? '1 compare' : `${r.reads} ${r.what.split(' ')[0]}`} | ${r.places} | ${r.ok} / ${r.refused} | ${r.seconds.toFixed(1)} s | ${r.baselineMb.toFixed(0)} MB | ${r.peakMb.toFixed(0)} MB | ${r.growthMb.toFixed(0)} MB | ${r.boundMb.toFixed(0)} MB | ${(r.growthMb / r.boundMb).toFixed(2)} |`;
      return [
        `## Heavy reads (/v1/compare and /v1/audit of two snapshots holding the largest result an agent may send, ${resultMb.toFixed(1)} MiB of JSON and ${Math.round(resultGzipKb)} kB of gzip, in each of their 12 cells; goal: peak RSS under the gateway's 512 MiB limit, growth within the places × 32 MiB and V8's 48 MiB young generation)`,
        '',
        '| store | reads at once | places (MAX_HEAVY_READS) | answered / refused (503) | wall time | RSS after one small read | peak RSS | growth | bound: places × 32 MiB + 48 MiB | growth ÷ bound |',
        '|---|---|---|---|---|---|---|---|---|---|',
        ...stores.flatMap((f) => f.rows.map((r) => row(f, r))),
        '',
        "`perfwatch gateway` as a process of its own (V8's young generation as its image sets it, 2 × 16 MB semi-spaces), its RSS from /proc: the baseline after one compare and one audit of a single cell, the peak (VmHWM, reset before) while the reads run; the client reads every answer as it arrives. A compare reads 24 results and an audit 12, 192 MB of JSON. Places: 4 as shipped (heavy-reads.ts: 128 MiB of the 512 MiB limit for reads holding 32 MiB each), and one per read, to show what the limit holds back. Reads beyond the places wait 5 s for one, then get 503 with Retry-After. Each result is handed back as soon as a read is done with it (a compare once it has read its audits, an audit once the socket has taken it), not left for V8 to collect: before that, four audits at once held eleven 16 MiB results (+178 MB of array buffers) and grew the gateway by up to 176 MB. Before (2026-11-25, the same bench against the code before the change, embedded store): the store inflated every cell of a snapshot at once and a compare parsed each of its 24 results into objects; one compare alone peaked at 1,148–1,169 MB (+850–870 MB), 8 at once at 1,338 MB (+1,034 MB, 37 s; a second run ended with the connection reset), one audit at 451 MB (+155 MB) and 8 audits at once at 1,812 MB (+1,514 MB): past the 512 MiB limit with a single compare.",
        '',
      ];
    },
  },
  {
    name: 'discovery',
    headings: ['## Sitemap discovery'],
    measure: async () =>
      sitemapDiscoverySection(await measureSitemapDiscovery(Number(process.env['BENCH_DISCOVERY_ROUNDS'] ?? 5))),
  },
  {
    name: 'artifacts',
    headings: ['## Artifacts'],
    measure: async () => [
      "## Artifacts (issue 35: the representative run's requests and trace, kept beside its snapshot)",
      '',
      ...artifactBoundsNote(),
      ...artifactSizesSection(await measureArtifactSizes()),
      ...artifactStreamingSection(await measureArtifactStreamingLevels()),
    ],
  },
  {
    name: 'site-scan',
    headings: ['## Site scan against Unlighthouse'],
    // All 200 pages take hours on 2 cores (each tool at each parallelism); BENCH_SITE_PAGES=40 a fifth of it.
    measure: async () => siteScanSection(await measureSiteScan(Number(process.env['BENCH_SITE_PAGES'] ?? 200))),
  },
];

const only = process.env['BENCH_ONLY']?.split(',').map((name) => name.trim());
const unknown = only?.filter((name) => !SECTIONS.some((section) => section.name === name)) ?? [];
if (unknown.length > 0)
  throw new Error(
    `BENCH_ONLY names no section ${unknown.join(', ')}; there are ${SECTIONS.map((section) => section.name).join(', ')}`,
  );
const out = join(dirname(fileURLToPath(import.meta.url)), 'results.md');
const previous = only ? await readFile(out, 'utf8').catch(() => '') : '';
/** A section as the last run wrote it: from its heading to the next one. */
const kept = (heading: string) => {
  const start = previous.indexOf(`\n${heading}`);
  if (start < 0) return [];
  const next = previous.indexOf('\n## ', start + 1);
  // The last section ends at the file's end, which may have no newline: its last line is kept too.
  const text = next < 0 ? `${previous.slice(start + 1).replace(/\n$/, '')}\n` : previous.slice(start + 1, next + 1);
  return text.split('\n').slice(0, -1);
};
const date = new Date().toISOString();
const body: string[] = [];
for (const section of SECTIONS) {
  if (!only || only.includes(section.name)) body.push(...(await section.measure()));
  else body.push(...section.headings.flatMap(kept));
}
const dateLine = only
  ? `- date: ${date} (${only.join(', ')}; the other sections as measured on ${(/as measured on (\S+?)\)/.exec(previous) ?? /- date: (\S+)/.exec(previous))?.[1] ?? 'an earlier run'})`
  : `- date: ${date}`;
const lines = [
  '# perfwatch benchmarks',
  '',
  dateLine,
  `- machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  '',
  ...body,
];
await writeFile(out, lines.join('\n'));
process.stdout.write(`${lines.join('\n')}\nwritten to ${out}\n`);
