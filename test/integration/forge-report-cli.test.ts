import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { reportMarker, type CompareResult, type Env } from '@perfwatch/common';
import { main } from '../../client/src/client-cli.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import {
  DOCUMENTED_ANSWERS,
  startForgeStandIn,
  type FaultKind,
  type ForgeName,
  type ForgeStandIn,
  type StatusRecord,
} from '../support/forge-standin.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// `perfwatch update URL --ci --report github|gitlab` run in-process as a CI job runs it, against a
// real gateway on a real nats-server and MongoDB-wire server, agents answering with captured
// Lighthouse results, and stand-ins of GitHub's and GitLab's APIs that answer only requests valid
// under their published OpenAPI documents. Production (the base) is measured once; every head is
// a preview of its own (a project per pull request: snapshots are told apart by the second, so no
// two scenarios share one), whose runs paint their largest content 500 ms later. Each documented error answer of each operation, and each forge's rate limit, is
// injected once: the CLI names it, and its exit code stays the budgets'.

const BASE = 'https://shop.example/';
const previewOf = (pull: number) => `https://pr-${pull}.preview.shop.example/`;
const FORGE_TOKEN = 'forge-token-of-the-ci-job';
/** A budget the slower previews miss on mobile (LCP ~1.8 s) and meet on desktop (~0.85 s). */
const FAILS_ON_MOBILE = ['--budget', 'lcp=1000'];
const PASSES = ['--budget', 'lcp=5000'];
const EXIT_OF = { pass: 0, fail: 1 } as const;

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
const agents: Agent[] = [];
const runners = [
  fixtureRunner({ delayMs: 2, change: slowerPreview }),
  fixtureRunner({ delayMs: 2, change: slowerPreview }),
];
let token: string;
let client: ApiClient;
let dir: string;
const standIns = {} as Record<ForgeName, ForgeStandIn>;

function slowerPreview(lhr: { requestedUrl?: string; audits: Record<string, { numericValue?: number }> }): void {
  if (lhr.requestedUrl !== BASE) lhr.audits['largest-contentful-paint']!.numericValue! += 500;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-forge-report-'));
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url });
  agentConn = await connect({ servers: nats.url });
  for (const [i, location] of (['london', 'tokyo'] as const).entries())
    agents.push(startAgent({ nc: agentConn, location, runner: runners[i]!, logger: silentLogger, agentId: location }));
  ({ token } = await gateway.admin.createUser('ci'));
  client = createApiClient({ server: gateway.url, token });
  await addProject(BASE);
  // Production from main, measured once for the whole file.
  await client.update({ url: BASE, branch: 'main', commit: 'a1'.repeat(20) });
  standIns.github = await startForgeStandIn({ forge: 'github', token: FORGE_TOKEN });
  standIns.gitlab = await startForgeStandIn({ forge: 'gitlab', token: FORGE_TOKEN });
}, 90_000);

afterAll(async () => {
  for (const standIn of Object.values(standIns)) await standIn.close();
  for (const agent of agents) await agent.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function addProject(url: string) {
  return gateway.admin.addProject('ci', url, { locations: ['london', 'tokyo'], runs: 3 });
}

/** A commit hash of its own for each pull request and role (`0` head, `e` GitHub's merge commit). */
const shaOf = (pull: number, role: '0' | 'e') => `${role}${pull.toString(16).padStart(7, '0')}`.repeat(5);

interface Change {
  forge: ForgeName;
  pull: number;
  /** A push, not a pull request: the forge is asked for the commit's pull requests. */
  push?: boolean;
}

/** The CI variables of a job for `change`, pointing at the forge's stand-in. */
async function ciEnv({ forge, pull, push }: Change): Promise<Env> {
  const head = shaOf(pull, '0');
  if (forge === 'gitlab')
    return {
      ...{ CI_API_V4_URL: standIns.gitlab.apiUrl, CI_PROJECT_ID: '42', CI_COMMIT_SHA: head, GITLAB_TOKEN: FORGE_TOKEN },
      ...(push
        ? { CI_COMMIT_REF_NAME: 'main' }
        : { CI_MERGE_REQUEST_IID: String(pull), CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: `preview-${pull}` }),
    };
  const github = { GITHUB_API_URL: standIns.github.apiUrl, GITHUB_REPOSITORY: 'octo/app', GITHUB_TOKEN: FORGE_TOKEN };
  if (push) return { ...github, GITHUB_SHA: head, GITHUB_REF: 'refs/heads/main', GITHUB_REF_NAME: 'main' };
  // Actions checks out the merge commit; the event names the pull request's head.
  const event = join(dir, `event-${pull}.json`);
  await writeFile(
    event,
    JSON.stringify({
      action: 'synchronize',
      number: pull,
      pull_request: { number: pull, head: { sha: head, ref: `preview-${pull}` } },
    }),
  );
  return {
    ...{ ...github, GITHUB_SHA: shaOf(pull, 'e'), GITHUB_EVENT_PATH: event, GITHUB_EVENT_NAME: 'pull_request' },
    ...{ GITHUB_REF: `refs/pull/${pull}/merge`, GITHUB_HEAD_REF: `preview-${pull}`, GITHUB_REF_NAME: `${pull}/merge` },
  };
}

/** `perfwatch update <preview> --ci --report <forge> …` in-process; its exit code and output. */
async function reportRun(change: Change, flags: string[], env?: Env) {
  let out = '';
  let err = '';
  const argv = ['update', previewOf(change.pull), '--ci', '--report', change.forge, '--base-url', BASE, ...flags];
  const code = await main(
    argv,
    { PERFWATCH_SERVER: gateway.url, PERFWATCH_TOKEN: token, ...(env ?? (await ciEnv(change))) },
    { out: { write: (text: string) => (out += text) }, err: { write: (text: string) => (err += text) }, pollMs: 50 },
  );
  return { code, out, err };
}

/** The forge's latest status per context on a commit, by context. */
function latestStatuses(forge: ForgeName, sha: string): Map<string, StatusRecord> {
  return new Map(standIns[forge].statuses(sha).map((status) => [status.context, status]));
}

/** The head snapshots of a preview, oldest first. */
async function headDates(url: string): Promise<string[]> {
  return ((await client.updates(url)).mobile ?? []).map((update) => update.date);
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A metric as the comment writes it: scores whole, timings in ms or s. */
function shown(metric: string, value: number): string {
  if (metric === 'performance') return String(Math.round(value));
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
}

/** The comment's row of a cell's metric: its cell, base and head values, and the U test's p-value. */
function rowPattern(cell: CompareResult['cells'][number], metric: 'performance' | 'lcp', label: string): RegExp {
  const m = cell.metrics.find((candidate) => candidate.metric === metric)!;
  const s = m.significance;
  if (s.test !== 'mann-whitney-u') throw new Error(`${metric}: no U test (${s.runs.from} vs ${s.runs.to} runs)`);
  const p = s.p < 0.001 ? '< 0.001' : s.p.toFixed(3);
  const cells = [`${cell.device} · ${cell.location}`, label, shown(metric, m.from!), shown(metric, m.to!)];
  const pText = s.beyondNoise ? `**${p}**` : p;
  return new RegExp(`^\\| ${cells.map(escaped).join(' \\| ')} \\| [^|]+ \\| ${escaped(pText)} \\|$`, 'm');
}

const CELLS = ['mobile/london', 'mobile/tokyo', 'desktop/london', 'desktop/tokyo'] as const;

describe.each([
  { forge: 'github' as const, pull: 7, failed: 'failure' },
  { forge: 'gitlab' as const, pull: 8, failed: 'failed' },
])('$forge: the report on a pull request, run twice', ({ forge, pull, failed }) => {
  const url = previewOf(pull);
  const head = shaOf(pull, '0');
  const runs: Array<Awaited<ReturnType<typeof reportRun>>> = [];
  let dates: string[] = [];
  let compared: CompareResult;
  let firstCommentId: number | undefined;

  beforeAll(async () => {
    const standIn = standIns[forge];
    standIn.seedPullRequest({ number: pull, commits: [head], head: `preview-${pull}` });
    standIn.seedComments(pull, ['Someone else: looks good to me once the numbers are in.']);
    await addProject(url);
    runs.push(await reportRun({ forge, pull }, FAILS_ON_MOBILE));
    expect(standIn.invalidRequests()).toEqual([]);
    firstCommentId = standIn.comments(pull).find((c) => c.body.startsWith(reportMarker(BASE)))?.id;
    // Snapshots are told apart by the second: the second run's is a new one.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    runs.push(await reportRun({ forge, pull }, FAILS_ON_MOBILE));
    dates = await headDates(url);
    compared = await client.compare({ url, baseUrl: BASE, from: 'latest', to: dates.at(-1)! });
  }, 60_000);

  it("exits with the budgets' code (one failed on mobile) and sends every request valid under the forge's document", () => {
    expect(runs.map((run) => run.code)).toEqual([EXIT_OF.fail, EXIT_OF.fail]);
    expect(dates).toHaveLength(2);
    expect(standIns[forge].invalidRequests()).toEqual([]);
    for (const run of runs) expect(run.err).not.toMatch(/NOT SENT/);
  });

  it("sets a status per device × location on the pull request's head commit, state from the budgets", () => {
    const latest = latestStatuses(forge, head);
    expect([...latest.keys()].sort()).toEqual(CELLS.map((cell) => `perfwatch/${cell}`).sort());
    // One per cell and run, on the head: none on the merge commit GitHub Actions checks out.
    expect(standIns[forge].statuses(head)).toHaveLength(8);
    expect(standIns[forge].statuses(shaOf(pull, 'e'))).toEqual([]);
    for (const cell of CELLS) {
      const status = latest.get(`perfwatch/${cell}`)!;
      expect(status.state, cell).toBe(cell.startsWith('mobile') ? failed : 'success');
      expect(status.description!.length).toBeLessThanOrEqual(140);
      const [device, location] = cell.split('/');
      const lcp = compared.cells
        .find((c) => c.device === device && c.location === location)!
        .metrics.find((m) => m.metric === 'lcp')!;
      expect(status.description).toMatch(/^perf \d+/);
      // The head's median LCP and its change (the preview's 500 ms, give or take the runs' spread).
      expect(status.description).toContain(`LCP ${shown('lcp', lcp.to!)} (+`);
      expect(lcp.difference).toBeGreaterThan(400);
      expect(status.description).toMatch(cell.startsWith('mobile') ? /1 budget failed$/ : /budgets passed$/);
    }
  });

  it("points each status at the dashboard's compare view of its cell, base against head", () => {
    for (const [context, status] of latestStatuses(forge, head)) {
      const [, device, location] = context.split('/');
      const target = new URL(status.targetUrl!);
      expect(`${target.origin}${target.pathname}`).toBe(`${gateway.url}/`);
      expect(target.hash).toMatch(/^#\/compare\?/);
      const query = Object.fromEntries(new URLSearchParams(target.hash.slice('#/compare?'.length)));
      expect(query).toEqual({ url, baseUrl: BASE, from: compared.from, to: dates[1], device, location });
    }
  });

  it('keeps exactly one comment of its own, edited by the second run, and leaves the others alone', () => {
    const comments = standIns[forge].comments(pull);
    expect(comments).toHaveLength(2);
    expect(comments[0]!.body).toBe('Someone else: looks good to me once the numbers are in.');
    const own = comments.filter((c) => c.body.includes(reportMarker(BASE)));
    expect(own).toHaveLength(1);
    expect(own[0]!.id).toBe(firstCommentId);
    expect(runs[0]!.err).toContain(`comment on #${pull} added`);
    expect(runs[1]!.err).toContain(`comment ${firstCommentId} on #${pull} edited`);
    const body = own[0]!.body;
    expect(body).toContain(
      `Head: ${dates[1]} UTC · commit \`${head.slice(0, 12)}\` · branch \`preview-${pull}\` · #${pull}`,
    );
    expect(body).not.toContain(`Head: ${dates[0]}`);
    expect(body).toContain(`Base: ${BASE} at ${compared.from} UTC`);
    expect(compared.cells).toHaveLength(4);
    for (const cell of compared.cells) {
      expect(body).toMatch(rowPattern(cell, 'performance', 'Performance'));
      expect(body).toMatch(rowPattern(cell, 'lcp', 'LCP'));
      expect(body).toContain(`${cell.device === 'mobile' ? '❌' : '✅'} ${cell.device} · ${cell.location}`);
    }
    expect(body).toContain('budgets failed ❌');
  });

  it('stores the snapshot with its revision: the head commit, the branch and the pull request', async () => {
    const audit = await client.audit({ url, date: dates[1]! });
    const cells = (['mobile', 'desktop'] as const).flatMap((device) => Object.values(audit[device] ?? {}));
    expect(cells).toHaveLength(4);
    for (const cell of cells)
      expect(cell.revision).toEqual({ commit: head, branch: `preview-${pull}`, pullRequest: pull });
  });
});

/** Which step of a report an operation serves, so a fault in it is looked for there. */
const STEP_OF: Record<string, 'status' | 'comment' | 'pull requests'> = {
  'repos/create-commit-status': 'status',
  'issues/list-comments': 'comment',
  'issues/create-comment': 'comment',
  'issues/update-comment': 'comment',
  'repos/list-pull-requests-associated-with-commit': 'pull requests',
  postApiV4ProjectsIdStatusesSha: 'status',
  getApiV4ProjectsIdMergeRequestsNoteableIdNotes: 'comment',
  postApiV4ProjectsIdMergeRequestsNoteableIdNotes: 'comment',
  putApiV4ProjectsIdMergeRequestsNoteableIdNotesNoteId: 'comment',
  getApiV4ProjectsIdRepositoryCommitsShaMergeRequests: 'pull requests',
};
/** Operations that are only reached when perfwatch's comment is there already. */
const EDITS = new Set(['issues/update-comment', 'putApiV4ProjectsIdMergeRequestsNoteableIdNotesNoteId']);

interface FaultCase {
  forge: ForgeName;
  operationId: string;
  kind: FaultKind;
  pull: number;
  budgets: 'pass' | 'fail';
}

/** Every error answer each operation documents, and each forge's rate limit on every operation. */
const FAULTS: FaultCase[] = Object.entries(DOCUMENTED_ANSWERS)
  .flatMap(([operationId, answers]) =>
    (['rate-limit', ...answers.filter((status) => status >= 300)] as FaultKind[]).map((kind) => ({
      forge: (operationId.includes('/') ? 'github' : 'gitlab') as ForgeName,
      operationId,
      kind,
    })),
  )
  .map((fault, i) => ({ ...fault, pull: 100 + i, budgets: i % 2 === 0 ? 'fail' : 'pass' }));

/** The forge's own words for a fault the stand-in injects, as the CLI prints them after the status. */
function forgeWords(forge: ForgeName, kind: FaultKind): string {
  if (kind === 'rate-limit')
    return forge === 'github' ? '403 API rate limit exceeded for user ID 1.' : '429 Retry later';
  if (forge === 'github') return kind === 422 ? '422 Validation Failed' : `${kind} ${kind}`;
  return kind === 400 ? '400 body is invalid' : `${kind} ${kind} Error`;
}

/** How long after the request each forge's rate limit says to wait (GitHub's reset, GitLab's Retry-After). */
const RATE_LIMIT_SECONDS: Record<ForgeName, number> = { github: 3600, gitlab: 60 };

describe('every documented error answer, and the rate limit, of every operation', () => {
  it('covers each operation of both documents', () => {
    expect(new Set(FAULTS.map((fault) => fault.operationId))).toEqual(new Set(Object.keys(DOCUMENTED_ANSWERS)));
    expect(FAULTS.filter((fault) => fault.kind === 'rate-limit')).toHaveLength(10);
    expect(FAULTS.filter((fault) => fault.kind === 403 && fault.forge === 'github')).toHaveLength(1);
    expect(FAULTS.filter((fault) => fault.kind === 422)).toHaveLength(2);
  });

  it.each(FAULTS)(
    '$forge $operationId answering $kind: named on stderr, exit code from the budgets ($budgets)',
    async ({ forge, operationId, kind, pull, budgets }) => {
      const standIn = standIns[forge];
      const url = previewOf(pull);
      const step = STEP_OF[operationId]!;
      const head = shaOf(pull, '0');
      standIn.seedPullRequest({ number: pull, commits: [head], head: `preview-${pull}` });
      if (EDITS.has(operationId)) standIn.seedComments(pull, [`${reportMarker(BASE)}\nthe report of an earlier run`]);
      await addProject(url);
      standIn.failNext(operationId, kind);
      const sentBefore = standIn.requests.length;
      const started = Date.now();
      const run = await reportRun({ forge, pull, push: step === 'pull requests' }, [
        '--device',
        'mobile',
        ...(budgets === 'fail' ? FAILS_ON_MOBILE : PASSES),
      ]);
      const ended = Date.now();

      expect(run.code, run.err).toBe(EXIT_OF[budgets]);
      expect(standIn.invalidRequests()).toEqual([]);
      const sent = standIn.requests.slice(sentBefore);
      expect(sent.filter((request) => request.fault !== undefined).map((request) => request.operationId)).toEqual([
        operationId,
      ]);
      // Two statuses (mobile in London and Tokyo), then the comment or the commit's pull requests.
      const lines = run.err.split('\n').filter((line) => line.startsWith(`${forge}: `));
      expect(lines, run.err).toHaveLength(3);
      const refused = lines.findIndex((line) => line.startsWith(`${forge}: NOT SENT `));
      expect(refused, run.err).toBe(step === 'status' ? 0 : 2);
      expect(lines[refused]).toContain(`: ${forgeWords(forge, kind)}`);
      if (kind !== 'rate-limit') {
        expect(
          lines.filter((line) => line.includes('NOT SENT')),
          run.err,
        ).toHaveLength(1);
        return;
      }
      // Nothing more is asked of a forge that said to wait, and every step left says until when.
      expect(sent.at(-1)!.fault).toBeDefined();
      const wait = RATE_LIMIT_SECONDS[forge] * 1000;
      for (const line of lines.slice(refused)) {
        const until = /rate limited until (\S+Z)\b/.exec(line)?.[1];
        expect(until, line).toBeDefined();
        const at = Date.parse(until!);
        expect(at).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000 + wait - 1000);
        expect(at).toBeLessThanOrEqual(ended + wait);
      }
      for (const line of lines.slice(refused + 1))
        expect(line).toMatch(/^\w+: NOT SENT .*: not sent, rate limited until/);
    },
    30_000,
  );
});

describe('a report that cannot be sent', () => {
  it.each([
    { forge: 'github' as const, pull: 60, variable: 'GITHUB_TOKEN' },
    { forge: 'gitlab' as const, pull: 61, variable: 'GITLAB_TOKEN' },
  ])('$forge without $variable: exit 2 naming it, before anything is measured', async ({ forge, pull, variable }) => {
    await addProject(previewOf(pull));
    const { [variable]: _token, ...env } = await ciEnv({ forge, pull });
    const runsBefore = runners.map((runner) => runner.requests.length);
    const sentBefore = standIns[forge].requests.length;
    const run = await reportRun({ forge, pull }, FAILS_ON_MOBILE, env);
    expect(run.code).toBe(2);
    expect(run.err).toContain(variable);
    expect(runners.map((runner) => runner.requests.length)).toEqual(runsBefore);
    expect(standIns[forge].requests.length).toBe(sentBefore);
    expect(await headDates(previewOf(pull))).toEqual([]);
  });
});
