import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { forgeEventAnswerSchema, reportMarker } from '@perfwatch/common';
import type { MongoStore, ProjectRecord } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { startForgeStandIn, type ForgeName, type ForgeStandIn } from '../support/forge-standin.ts';
import {
  capturedLogger,
  isolatedNats,
  silentLogger,
  startTestGateway,
  type TestGateway,
} from '../support/test-services.ts';

// The gateway's forge reporter end to end, with real parts: a real gateway on a real nats-server
// and the MongoDB-wire test server, agents in London and Tokyo answering with captured Lighthouse
// results, and stand-ins of GitHub's and GitLab's APIs that answer only requests valid under their
// published OpenAPI documents. Production is measured first; then a signed deployment event names
// a preview, the gateway measures it and reports to the forge by itself: a status per cell on the
// deployed commit and one comment on the pull (merge) request it looks the commit up in, found again
// by its marker (named by production's page) and edited by later deployments, even at a new host.
//
// The stand-ins' rate limits say to wait as the forges do (GitHub: an hour, GitLab: a minute).
// The reporter is asked through a relay that passes every request and answer on unchanged, but
// for a rate limit's wait, shortened to a second or two, so that "tried again at the forge's time"
// is seen within the test; the relay also notes when each request arrived.

const POLL_MS = 100;
const RETRY_FIRST_MS = 300;
/** A budget only the preview's Tokyo mobile cell misses: its runs paint their largest content 2 s later. */
const LCP_BUDGET = 3000;
const PUBLIC_URL = 'https://perfwatch.example';
const CELLS = ['desktop/london', 'desktop/tokyo', 'mobile/london', 'mobile/tokyo'] as const;

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let agentConn: NatsConnection;
let gateway: TestGateway;
let client: ApiClient;
const agents: Agent[] = [];
const logLines: string[] = [];
const previewOrigins = new Set<string>();
const slowerInTokyo = (lhr: { requestedUrl?: string; audits: Record<string, { numericValue?: number }> }) => {
  if (previewOrigins.has(new URL(lhr.requestedUrl ?? 'http://none').origin))
    lhr.audits['largest-contentful-paint']!.numericValue! += 2000;
};
const runners = { london: fixtureRunner({ delayMs: 2 }), tokyo: fixtureRunner({ delayMs: 2, change: slowerInTokyo }) };

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    logger: capturedLogger(logLines),
    config: {
      PUBLIC_URL,
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      FORGE_REPORT_POLL_MS: POLL_MS,
      FORGE_REPORT_RETRY_FIRST_MS: RETRY_FIRST_MS,
    },
  });
  agentConn = await connect({ servers: nats.url });
  for (const location of ['london', 'tokyo'] as const)
    agents.push(
      startAgent({ nc: agentConn, location, runner: runners[location], logger: silentLogger, agentId: location }),
    );
  const { token } = await gateway.admin.createUser('ci');
  client = createApiClient({ server: gateway.url, token });
}, 90_000);

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

interface Relayed {
  at: number;
  method: string;
  path: string;
  status: number;
  /** A rate limit's answer: when the (shortened) wait it gives ends, in ms. */
  retryAt?: number;
}

/** The relay in front of a stand-in: what it passed on, and its URL. */
async function startRelay(target: string) {
  const seen: Relayed[] = [];
  /** Whether a rate limit's wait is shortened; when not, the forge's own answer passes as it is. */
  const shortens = { wait: true };
  const server: Server = createServer((req, res) => {
    void (async () => {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      const at = Date.now();
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(
          (entry): entry is [string, string] =>
            typeof entry[1] === 'string' && !['host', 'connection', 'content-length'].includes(entry[0]),
        ),
      );
      const answer = await fetch(`${target}${req.url ?? '/'}`, {
        method: req.method,
        headers,
        ...(body === '' ? {} : { body }),
      });
      const out = Object.fromEntries(
        [...answer.headers].filter(([name]) => !['content-length', 'transfer-encoding', 'connection'].includes(name)),
      );
      const record: Relayed = { at, method: req.method ?? 'GET', path: req.url ?? '/', status: answer.status };
      if (!shortens.wait) {
        // the forge's own wait
      } else if (answer.headers.get('x-ratelimit-remaining') === '0') {
        // GitHub: the epoch second the limit resets at, one to two seconds from now.
        const reset = Math.floor(Date.now() / 1000) + 2;
        out['x-ratelimit-reset'] = String(reset);
        record.retryAt = reset * 1000;
      } else if (answer.status === 429) {
        // GitLab: Retry-After (the gateway reads it first), and its reset headers to match.
        out['retry-after'] = '1';
        out['ratelimit-reset'] = String(Math.ceil(Date.now() / 1000) + 1);
        record.retryAt = at + 1000;
      }
      seen.push(record);
      res.writeHead(answer.status, out);
      res.end(await answer.text());
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    shortens,
    async close(): Promise<void> {
      server.close();
      server.closeAllConnections();
      await once(server, 'close');
    },
  };
}

/** Polls `read` until `done` holds of its value; the value. A deadline far beyond a 2× slower machine's. */
async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await sleep(POLL_MS);
  }
}

/** A commit hash of its own for each forge and deployment. */
const shaOf = (forge: ForgeName, n: number) => `${forge === 'github' ? 'a' : 'b'}${n}`.padEnd(40, String(n));

const hmac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

interface Deployment {
  id: number;
  sha: string;
  /** The preview's origin when not the forge case's own: a host per push, as Vercel deploys. */
  origin?: string;
}

interface ForgeCase {
  forge: ForgeName;
  production: string;
  previewOrigin: string;
  pull: number;
  failed: string;
  statusOperation: string;
  editOperation: string;
  lookupOperation: string;
  /** How long the stand-in's rate limit says to wait, as the forge does, and its words. */
  rateLimitSeconds: number;
  rateLimited: string;
  refusal: string;
}

const CASES: ForgeCase[] = [
  {
    forge: 'github',
    production: 'https://github-shop.example/',
    previewOrigin: 'http://127.0.0.1:4101',
    pull: 7,
    failed: 'failure',
    statusOperation: 'repos/create-commit-status',
    editOperation: 'issues/update-comment',
    lookupOperation: 'repos/list-pull-requests-associated-with-commit',
    rateLimitSeconds: 3600,
    rateLimited: '403 API rate limit exceeded',
    refusal: '422 Validation Failed',
  },
  {
    forge: 'gitlab',
    production: 'https://gitlab-shop.example/',
    previewOrigin: 'http://127.0.0.1:4102',
    pull: 8,
    failed: 'failed',
    statusOperation: 'postApiV4ProjectsIdStatusesSha',
    editOperation: 'putApiV4ProjectsIdMergeRequestsNoteableIdNotesNoteId',
    lookupOperation: 'getApiV4ProjectsIdRepositoryCommitsShaMergeRequests',
    rateLimitSeconds: 60,
    rateLimited: '429 Retry later',
    refusal: '400 body is invalid',
  },
];

/** A deployment event as the forge delivers it, signed with the link's webhook secret. */
function delivery(forge: ForgeName, secret: string, environmentUrl: string, { id, sha }: Deployment) {
  if (forge === 'gitlab') {
    const body = JSON.stringify({
      object_kind: 'deployment',
      status: 'success',
      deployment_id: id,
      environment: 'review',
      environment_external_url: environmentUrl,
      sha,
      ref: 'faster-cart',
      project: { id: 42, path_with_namespace: 'group/app' },
    });
    return { body, headers: { 'X-Gitlab-Event': 'Deployment Hook', 'X-Gitlab-Token': secret } };
  }
  const body = JSON.stringify({
    action: 'created',
    deployment_status: { id, state: 'success', environment_url: environmentUrl, target_url: '' },
    deployment: { id: 9000 + id, sha, ref: 'faster-cart', environment: 'preview' },
    repository: { full_name: 'octo/app' },
  });
  return {
    body,
    headers: { 'X-GitHub-Event': 'deployment_status', 'X-Hub-Signature-256': `sha256=${hmac(secret, body)}` },
  };
}

type ForgeEventRecord = NonNullable<Awaited<ReturnType<MongoStore['findForgeEvent']>>>;

const eventKey = (forge: ForgeName, linked: ProjectRecord, id: number) =>
  forge === 'github' ? `github:${id}@${linked.id}` : `gitlab:42:${id}:success@${linked.id}`;

describe.each(CASES)('$forge: a deployment measured and reported by the gateway', (c) => {
  const token = `${c.forge}-token-${randomBytes(16).toString('hex')}`;
  const secret = `${c.forge}-hook-${randomBytes(12).toString('hex')}`;
  const preview = `${c.previewOrigin}/`;
  const pullRequest = { number: c.pull, commits: [] as string[], head: 'faster-cart' };
  let standIn: ForgeStandIn;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let linked: ProjectRecord;
  /** How long the first report took from the event to its comment: the measure of the quiet waits. */
  let firstReportMs = 0;
  let commentId: number;

  beforeAll(async () => {
    previewOrigins.add(c.previewOrigin);
    standIn = await startForgeStandIn({ forge: c.forge, token });
    relay = await startRelay(standIn.apiUrl.replace(/\/api\/v4$/, ''));
    linked = await gateway.admin.addProject('ci', c.production, { locations: ['london', 'tokyo'], runs: 3 });
    await gateway.admin.setBudgets('ci', c.production, { budgets: { lcp: LCP_BUDGET }, maxRegression: {} });
    // Production from main, measured before any preview.
    await client.update({ url: c.production, branch: 'main', commit: 'f'.repeat(40) });
    standIn.seedPullRequest(pullRequest);
    // An earlier pull request of the same commits, closed: the forge lists it too, and it gets nothing.
    standIn.seedPullRequest({ number: c.pull + 100, commits: pullRequest.commits, state: 'closed' });
    const view = await client.linkRepository({
      url: c.production,
      forge: c.forge,
      repository: c.forge === 'github' ? 'octo/app' : 'group/app',
      apiUrl: c.forge === 'github' ? relay.origin : `${relay.origin}/api/v4`,
      token,
      webhookSecret: secret,
    });
    expect(view.tokenSet).toBe(true);
  }, 60_000);

  afterAll(async () => {
    await relay?.close();
    await standIn?.close();
  });

  async function deliver(deployment: Deployment) {
    const { body, headers } = delivery(c.forge, secret, deployment.origin ?? c.previewOrigin, deployment);
    const res = await fetch(`${gateway.url}/v1/forge-events/${c.forge}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, body: forgeEventAnswerSchema.parse(await res.json()) };
  }

  /** A new deployment of a commit pushed to the pull request: its event delivered, its record once reported. */
  async function deploy(deployment: Deployment): Promise<ForgeEventRecord> {
    // Snapshots are told apart by the second: the next one starts in a second of its own.
    await sleep(1000 - (Date.now() % 1000) + 10);
    pullRequest.commits.push(deployment.sha);
    const answer = await deliver(deployment);
    const previewUrl = `${deployment.origin ?? c.previewOrigin}/`;
    expect(answer).toEqual({ status: 200, body: { ok: 1, id: expect.any(String), previewUrl } });
    return reported(deployment.id);
  }

  async function reported(id: number): Promise<ForgeEventRecord> {
    const event = await until(
      () => gateway.store.findForgeEvent(eventKey(c.forge, linked, id)),
      (found) => found?.reportedAt != null,
      `event ${id} reported`,
    );
    return event!;
  }

  /** Long enough for a retry the reporter would make to have been made, on a machine twice as slow. */
  const quiet = () => sleep(2 * firstReportMs + 2 * (RETRY_FIRST_MS * 1.2 + POLL_MS));

  const previewSnapshots = async (url = preview) => (await client.updates(url)).mobile?.length ?? 0;
  const previewRuns = () =>
    [runners.london, runners.tokyo].flatMap((r) => r.requests).filter((r) => r.url === preview).length;
  const own = () => standIn.comments(c.pull).filter((comment) => comment.body.includes(reportMarker(c.production)));

  it('measures the preview once and sets a valid status per cell on the deployed commit, state from the budgets', async () => {
    const started = Date.now();
    const event = await deploy({ id: 501, sha: shaOf(c.forge, 1) });
    firstReportMs = Date.now() - started;
    expect([event.lastReportError, event.reportAttempts, event.revision.commit]).toEqual([null, 0, shaOf(c.forge, 1)]);
    // One update: three runs of each device in each location, and the confirmation of the failed budget.
    expect([await previewSnapshots(), previewRuns()]).toEqual([1, 3 * 2 * 2 + 1]);
    expect(standIn.invalidRequests()).toEqual([]);
    const statuses = standIn.statuses(shaOf(c.forge, 1));
    expect(statuses.map((s) => s.context).sort()).toEqual(CELLS.map((cell) => `perfwatch/${cell}`));
    for (const status of statuses) {
      expect(status.state, status.context).toBe(status.context === 'perfwatch/mobile/tokyo' ? c.failed : 'success');
      expect(status.description!.length).toBeLessThanOrEqual(140);
      expect(status.targetUrl).toMatch(new RegExp(`^${PUBLIC_URL}/#/compare\\?`));
      const query = new URLSearchParams(new URL(status.targetUrl!).hash.slice('#/compare?'.length));
      expect([query.get('url'), query.get('baseUrl')]).toEqual([preview, c.production]);
    }
  });

  it('comments once on the pull request the commit was looked up in', () => {
    const comments = standIn.comments(c.pull);
    expect(comments).toHaveLength(1);
    expect(own()).toHaveLength(1);
    expect(standIn.comments(c.pull + 100)).toEqual([]);
    commentId = comments[0]!.id;
    expect(comments[0]!.body).toContain(`commit \`${shaOf(c.forge, 1).slice(0, 12)}\``);
    expect(comments[0]!.body).toContain('budgets failed ❌');
    expect(comments[0]!.body).toContain(`Base: ${c.production} at `);
    const lookups = standIn.requests.filter((r) => r.operationId === c.lookupOperation);
    expect(lookups.map((r) => r.path)).toEqual([expect.stringContaining(`/commits/${shaOf(c.forge, 1)}/`)]);
  });

  it('measures nothing more and comments nothing more for a redelivery of the same event', async () => {
    const [runs, sent] = [previewRuns(), standIn.requests.length];
    const again = await deliver({ id: 501, sha: shaOf(c.forge, 1) });
    expect(again).toEqual({ status: 200, body: { ok: 1, duplicate: true, id: expect.any(String) } });
    await quiet();
    expect([previewRuns(), await previewSnapshots(), standIn.requests.length]).toEqual([runs, 1, sent]);
    expect(standIn.comments(c.pull)).toHaveLength(1);
  });

  it('edits the same comment for a second deployment to the pull request, at a host of its own', async () => {
    const origin = c.previewOrigin.replace('127.0.0.1', '127.0.0.2');
    previewOrigins.add(origin);
    await deploy({ id: 502, sha: shaOf(c.forge, 2), origin });
    expect([await previewSnapshots(), await previewSnapshots(`${origin}/`)]).toEqual([1, 1]);
    expect(standIn.statuses(shaOf(c.forge, 2))).toHaveLength(4);
    const comments = standIn.comments(c.pull);
    expect(comments.map((comment) => comment.id)).toEqual([commentId]);
    expect(comments[0]!.body).toContain(`commit \`${shaOf(c.forge, 2).slice(0, 12)}\``);
    expect(comments[0]!.body).toContain(`### perfwatch: ${origin}/ — budgets failed ❌`);
    expect(standIn.invalidRequests()).toEqual([]);
  });

  it("tries a rate-limited report again at the forge's time, and completes it", async () => {
    standIn.failNext(c.statusOperation, 'rate-limit');
    const seenBefore = relay.seen.length;
    const event = await deploy({ id: 503, sha: shaOf(c.forge, 3) });
    const seen = relay.seen.slice(seenBefore);
    const limited = seen.findIndex((r) => r.retryAt !== undefined);
    expect(limited).toBe(0);
    // Nothing more was asked of the forge until its wait was over; then the whole report was sent.
    const retried = seen[1]!;
    expect(retried.at).toBeGreaterThanOrEqual(seen[0]!.retryAt!);
    expect(retried.status).toBeLessThan(300);
    expect(event.reportAttempts).toBe(1);
    expect(
      standIn
        .statuses(shaOf(c.forge, 3))
        .map((s) => s.context)
        .sort(),
    ).toEqual(CELLS.map((cell) => `perfwatch/${cell}`));
    expect(standIn.comments(c.pull).map((comment) => comment.id)).toEqual([commentId]);
    expect(standIn.comments(c.pull)[0]!.body).toContain(`commit \`${shaOf(c.forge, 3).slice(0, 12)}\``);
    expect(logLines.some((line) => line.includes('forge report deferred'))).toBe(true);
    expect(standIn.invalidRequests()).toEqual([]);
  });

  it('keeps a refused comment as the report error, final: no more requests', async () => {
    standIn.failNext(c.editOperation, 'validation');
    const event = await deploy({ id: 504, sha: shaOf(c.forge, 4) });
    expect(event.lastReportError).toContain(c.refusal);
    expect(event.reportAttempts).toBe(1);
    expect(standIn.statuses(shaOf(c.forge, 4))).toHaveLength(4);
    const refused = standIn.requests.filter((r) => r.fault !== undefined);
    expect(refused.map((r) => r.operationId)).toEqual([c.statusOperation, c.editOperation]);
    const sent = standIn.requests.length;
    await quiet();
    expect(standIn.requests.length).toBe(sent);
    expect((await gateway.store.findForgeEvent(eventKey(c.forge, linked, 504)))!.reportAttempts).toBe(1);
    // The comment still holds the report the forge took last.
    expect(standIn.comments(c.pull)[0]!.body).toContain(`commit \`${shaOf(c.forge, 3).slice(0, 12)}\``);
    expect(standIn.invalidRequests()).toEqual([]);
  });

  it("defers a report for the forge's own wait (GitHub an hour, GitLab a minute), asking nothing before", async () => {
    relay.shortens.wait = false;
    standIn.failNext(c.statusOperation, 'rate-limit');
    const id = 505;
    await sleep(1000 - (Date.now() % 1000) + 10);
    pullRequest.commits.push(shaOf(c.forge, 5));
    const started = Date.now();
    expect((await deliver({ id, sha: shaOf(c.forge, 5) })).status).toBe(200);
    const event = await until(
      () => gateway.store.findForgeEvent(eventKey(c.forge, linked, id)),
      (found) => (found?.reportAttempts ?? 0) > 0,
      `event ${id} deferred`,
    );
    const ended = Date.now();
    const sent = standIn.requests.length;
    expect(standIn.requests.at(-1)!.fault).toBeDefined();
    const wait = c.rateLimitSeconds * 1000;
    expect(event!.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(Math.floor(started / 1000) * 1000 + wait - 1000);
    expect(event!.nextAttemptAt!.getTime()).toBeLessThanOrEqual(ended + wait);
    expect([event!.reportedAt, event!.lastReportError]).toEqual([null, expect.stringContaining(c.rateLimited)]);
    await quiet();
    expect(standIn.requests.length).toBe(sent);
    expect(standIn.statuses(shaOf(c.forge, 5))).toEqual([]);
    relay.shortens.wait = true;
  });

  it("never wrote the link's token or webhook secret to the gateway's log", () => {
    expect(logLines.some((line) => line.includes('forge report sent'))).toBe(true);
    expect(logLines.filter((line) => line.includes(token) || line.includes(secret))).toEqual([]);
  });
});
