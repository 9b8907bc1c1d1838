import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  errorEnvelopeSchema,
  forgeEventAnswerSchema,
  repositoryLinkViewSchema,
  updateStatusSchema,
} from '@perfwatch/common';
import {
  createAdmin,
  gatewayConfigWith,
  startGateway,
  type MongoStore,
  SqliteStore,
  type ProjectRecord,
} from '@perfwatch/gateway';
import {
  capturedLogger,
  isolatedNats,
  silentLogger,
  startTestGateway,
  type TestGateway,
} from '../support/test-services.ts';

// The forge receiver through the real gateway: a real nats-server (JetStream queue) and the
// MongoDB-wire test server. No agent serves london, so a queued preview update stays unfinished
// (UPDATE_DEADLINE_MS is long): what is counted is what was queued, not what was measured.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let store: MongoStore;
let base: string;
let token: string;
let linked: ProjectRecord;
const logLines: string[] = [];
const answers: string[] = [];

const SHOP = 'https://shop.example/cart?step=1';
const GITHUB_TOKEN = `ghp_${randomBytes(18).toString('hex')}`;
const GITHUB_SECRET = `gh-hook-${randomBytes(12).toString('hex')}`;
const GITEA_TOKEN = `gitea-${randomBytes(18).toString('hex')}`;
const GITEA_SECRET = `gitea-hook-${randomBytes(12).toString('hex')}`;
const GITLAB_TOKEN = `glpat-${randomBytes(18).toString('hex')}`;
const GITLAB_SECRET = `gl-hook-${randomBytes(12).toString('hex')}`;
const OTHER_SECRET = `other-hook-${randomBytes(12).toString('hex')}`;
const SECRETS = [OTHER_SECRET, GITHUB_TOKEN, GITHUB_SECRET, GITEA_TOKEN, GITEA_SECRET, GITLAB_TOKEN, GITLAB_SECRET];
const SHA = 'c0ffee'.padEnd(40, '1');
const GITHUB_LINK = { forge: 'github', repository: 'Acme/Shop', token: GITHUB_TOKEN, webhookSecret: GITHUB_SECRET };
/** What both gateways here are started with: previews on this machine, forge secrets sealed, updates left queued. */
const FORGE_SETTINGS = {
  UPDATE_DEADLINE_MS: 600_000,
  PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
};

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    logger: capturedLogger(logLines),
    // Failed authentications back at the default limit (30): the unlinked repositories' events below must not count.
    config: { ...FORGE_SETTINGS, AUTH_FAILURES_PER_MINUTE: 30 },
  });
  ({ store, url: base } = gateway);
  ({ token } = await gateway.admin.createUser('forger'));
  linked = await gateway.admin.addProject('forger', SHOP, { locations: ['london'], runs: 2 });
  await store.setProjectBudgets(linked.id, { budgets: { performance: 80 }, maxRegression: {} });
}, 60_000);

afterAll(async () => {
  await gateway?.stop();
  await nats?.dispose();
});

async function call(path: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  answers.push(text);
  return { status: res.status, body: JSON.parse(text) as unknown };
}

/** Links SHOP (or the `url` given) to a repository, as the user of `as` (the first user's token by default). */
const link = (body: object, as = token) =>
  call('/v1/projects/repository', {
    method: 'PUT',
    headers: { Authorization: as, 'Content-Type': 'application/json' },
    body: JSON.stringify({ url: SHOP, ...body }),
  });

const deliver = (forge: string, payload: unknown, headers: Record<string, string>) =>
  call(`/v1/forge-events/${forge}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });

const hmac = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

function githubDelivery(id: number, environmentUrl: string, state = 'success', secret = GITHUB_SECRET) {
  const body = JSON.stringify({
    action: 'created',
    deployment_status: { id, state, environment_url: environmentUrl, target_url: '' },
    deployment: { id: 77, sha: SHA, ref: 'feature/faster-cart', environment: 'preview' },
    repository: { full_name: 'Acme/Shop' },
  });
  return {
    body,
    headers: { 'X-GitHub-Event': 'deployment_status', 'X-Hub-Signature-256': `sha256=${hmac(secret, body)}` },
  };
}

const backlog = async () => (await store.userBacklog(linked.userId)).updates;
const projects = async () => (await store.listProjects(linked.userId)).map((p) => p.url).sort();

describe('POST /v1/forge-events/{forge}', () => {
  it('links the project to its GitHub repository; the answer names no secret', async () => {
    const put = await link(GITHUB_LINK);
    expect(put.status).toBe(200);
    expect(repositoryLinkViewSchema.parse(put.body)).toEqual({
      url: SHOP,
      forge: 'github',
      repository: 'Acme/Shop',
      apiUrl: 'https://api.github.com',
      previewUrl: null,
      defaultBranch: 'main',
      tokenSet: true,
      webhookSecretSet: true,
    });
    const read = await call(`/v1/projects/repository?url=${encodeURIComponent(SHOP)}`, {
      headers: { Authorization: token },
    });
    expect(read.body).toEqual(put.body);
  });

  it('refuses a forged signature and an unsigned event with 401: nothing stored or queued', async () => {
    const { body } = githubDelivery(1001, 'http://127.0.0.1:4999');
    const forged = await deliver('github', body, {
      'X-GitHub-Event': 'deployment_status',
      'X-Hub-Signature-256': `sha256=${hmac('not-the-secret-at-all', body)}`,
    });
    expect(forged.status).toBe(401);
    expect(errorEnvelopeSchema.parse(forged.body).status).toBe('UNAUTHORIZED');
    const unsigned = await deliver('github', body, { 'X-GitHub-Event': 'deployment_status' });
    expect(unsigned.status).toBe(401);
    const garbage = await deliver('github', 'not json', {
      'X-Hub-Signature-256': `sha256=${hmac(GITHUB_SECRET, 'not json')}`,
    });
    expect(garbage.status).toBe(401);
    expect(await backlog()).toBe(0);
    expect(await projects()).toEqual([SHOP]);
    expect(await store.findForgeEvent(`github:1001@${linked.id}`)).toBeNull();
  });

  it("events of repositories nobody linked here are refused without counting against the forge's address", async () => {
    // More than AUTH_FAILURES_PER_MINUTE (30) of them: an organisation's webhook, another
    // tenant's repository. Counted, they would shut every tenant's deliveries out for a minute.
    for (let i = 0; i < 40; i += 1) {
      const body = JSON.stringify({ deployment_status: { id: 5000 + i }, repository: { full_name: 'Other/Unlinked' } });
      const refused = await deliver('github', body, {
        'X-GitHub-Event': 'deployment_status',
        'X-Hub-Signature-256': `sha256=${hmac(OTHER_SECRET, body)}`,
      });
      expect(refused.status).toBe(401);
    }
    const { body, headers } = githubDelivery(1002, 'http://127.0.0.1:4999', 'pending');
    expect((await deliver('github', body, headers)).status).toBe(202);
    // The API's own count of failed tokens is another one.
    expect((await call('/v1/projects', { headers: { Authorization: 'pw_wrong' } })).status).toBe(401);
  });

  it('queues one ci update of the preview with its revision; a redelivery is a duplicate and queues nothing', async () => {
    const { body, headers } = githubDelivery(1002, 'http://127.0.0.1:4999/base/');
    const first = await deliver('github', body, headers);
    expect(first.status).toBe(200);
    const accepted = forgeEventAnswerSchema.parse(first.body);
    expect(accepted).toEqual({ ok: 1, id: expect.any(String), previewUrl: 'http://127.0.0.1:4999/base/cart?step=1' });
    const id = (accepted as { id: string }).id;
    const status = await call(`/v1/updates/${id}`, { headers: { Authorization: token } });
    expect(updateStatusSchema.parse(status.body).revision).toEqual({ commit: SHA, branch: 'feature/faster-cart' });
    const preview = (await store.findProject(linked.userId, 'http://127.0.0.1:4999/base/cart?step=1'))!;
    expect([preview.locations, preview.runs, preview.schedule, preview.auth]).toEqual([['london'], 2, null, null]);
    expect(preview.budgets.budgets).toEqual({ performance: 80 });
    expect(await store.previewOf(preview.id)).toBe(linked.id);
    expect(await backlog()).toBe(1);

    const again = await deliver('github', body, headers);
    expect([again.status, again.body]).toEqual([200, { ok: 1, duplicate: true, id }]);
    const [x, y] = await Promise.all([deliver('github', body, headers), deliver('github', body, headers)]);
    expect([x.body, y.body]).toEqual([
      { ok: 1, duplicate: true, id },
      { ok: 1, duplicate: true, id },
    ]);
    expect(await backlog()).toBe(1);
    const event = (await store.findForgeEvent(`github:1002@${linked.id}`))!;
    expect([event.updateId, event.previewProjectId, event.linkProjectId, event.reportedAt]).toEqual([
      id,
      preview.id,
      linked.id,
      null,
    ]);
  });

  it('measures one update for two deliveries of a new event at once', async () => {
    const { body, headers } = githubDelivery(1003, 'http://127.0.0.1:4998');
    const both = await Promise.all([deliver('github', body, headers), deliver('github', body, headers)]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    const ids = both.map((r) => (r.body as { id: string }).id);
    expect(ids[0]).toBe(ids[1]);
    expect(both.filter((r) => (r.body as { duplicate?: boolean }).duplicate)).toHaveLength(1);
    expect(await backlog()).toBe(2);
  });

  it("measures a deployment once per project linked to the repository, each by its own webhook's secret", async () => {
    const { admin } = gateway;
    const { token: theirToken } = await admin.createUser('also-linked');
    const theirs = await admin.addProject('also-linked', 'https://shop.example/checkout', { locations: ['london'] });
    const put = await link(
      { ...GITHUB_LINK, url: theirs.url, repository: 'acme/SHOP', webhookSecret: OTHER_SECRET },
      theirToken,
    );
    expect(put.status).toBe(200);
    // The deployment the first project's webhook delivered already, now by the other project's webhook.
    const { body, headers } = githubDelivery(1002, 'http://127.0.0.1:4999/base/', 'success', OTHER_SECRET);
    const theirsMeasured = await deliver('github', body, headers);
    expect(theirsMeasured.body).toEqual({
      ok: 1,
      id: expect.any(String),
      previewUrl: 'http://127.0.0.1:4999/base/checkout',
    });
    expect((await store.userBacklog(theirs.userId)).updates).toBe(1);
    expect(await backlog()).toBe(2);
  });

  it('refuses a preview at a private address with 422, before anything is queued', async () => {
    const { body, headers } = githubDelivery(1004, 'http://10.1.2.3');
    const refused = await deliver('github', body, headers);
    expect(refused.status).toBe(422);
    expect(errorEnvelopeSchema.parse(refused.body).errors.join(' ')).toMatch(/10\.1\.2\.3.*not a public address/);
    expect(await store.findForgeEvent(`github:1004@${linked.id}`)).toBeNull();
    expect(await backlog()).toBe(2);
  });

  it('answers 202 for a signed event it does not measure', async () => {
    const failed = githubDelivery(1005, 'http://127.0.0.1:4999', 'failure');
    expect(await deliver('github', failed.body, failed.headers)).toEqual({
      status: 202,
      body: { ok: 1, ignored: 'deployment state failure is not success' },
    });
    const push = githubDelivery(1006, 'http://127.0.0.1:4999');
    const other = await deliver('github', push.body, { ...push.headers, 'X-GitHub-Event': 'push' });
    expect([other.status, other.body]).toEqual([202, { ok: 1, ignored: 'event push is not deployment_status' }]);
    expect(await backlog()).toBe(2);
  });

  it('takes Gitea pull requests through the link template, GitLab deployments by their token', async () => {
    const giteaLink = await link({
      forge: 'gitea',
      repository: 'acme/shop',
      apiUrl: 'http://127.0.0.1:3000/api/v1',
      token: GITEA_TOKEN,
      webhookSecret: GITEA_SECRET,
      previewUrl: 'http://127.0.0.1:{pullRequest}',
    });
    expect(giteaLink.status).toBe(200);
    const pr = JSON.stringify({
      action: 'synchronized',
      number: 4321,
      pull_request: { head: { sha: SHA, ref: 'faster' } },
      repository: { full_name: 'acme/shop' },
    });
    const gitea = await deliver('gitea', pr, {
      'X-Gitea-Event': 'pull_request',
      'X-Gitea-Signature': hmac(GITEA_SECRET, pr),
    });
    expect([gitea.status, (gitea.body as { previewUrl?: string }).previewUrl]).toEqual([
      200,
      'http://127.0.0.1:4321/cart?step=1',
    ]);
    const giteaEvent = (await store.findForgeEvent(`gitea:acme/shop:4321:${SHA}@${linked.id}`))!;
    expect(giteaEvent.revision).toEqual({ commit: SHA, branch: 'faster', pullRequest: 4321 });

    const gitlabLink = await link({
      forge: 'gitlab',
      repository: 'acme/web/shop',
      token: GITLAB_TOKEN,
      webhookSecret: GITLAB_SECRET,
    });
    expect(gitlabLink.status).toBe(200);
    const deployment = {
      object_kind: 'deployment',
      status: 'success',
      deployment_id: 15,
      environment_external_url: 'http://127.0.0.2:8080',
      sha: SHA,
      ref: 'main',
      project: { id: 99, path_with_namespace: 'acme/web/shop' },
    };
    const gitlabHeaders = { 'X-Gitlab-Event': 'Deployment Hook' };
    const wrong = await deliver('gitlab', deployment, { ...gitlabHeaders, 'X-Gitlab-Token': 'not-the-token' });
    expect(wrong.status).toBe(401);
    const gitlab = await deliver('gitlab', deployment, { ...gitlabHeaders, 'X-Gitlab-Token': GITLAB_SECRET });
    expect([gitlab.status, (gitlab.body as { previewUrl?: string }).previewUrl]).toEqual([
      200,
      'http://127.0.0.2:8080/cart?step=1',
    ]);
    expect(await store.findForgeEvent(`gitlab:99:15:success@${linked.id}`)).not.toBeNull();
    // The GitHub link was replaced: its events no longer verify.
    const stale = githubDelivery(1007, 'http://127.0.0.1:4999');
    expect((await deliver('github', stale.body, stale.headers)).status).toBe(401);
    expect(await backlog()).toBe(4);
  });

  it('refuses a body over 1 MiB with 413, and any method but POST', async () => {
    const big = await deliver('github', `{"x":"${'a'.repeat(1024 * 1024)}"}`, {
      'X-GitHub-Event': 'deployment_status',
    });
    expect(big.status).toBe(413);
    expect((await call('/v1/forge-events/github', { method: 'GET' })).status).toBe(405);
    expect((await deliver('bitbucket', {}, {})).status).toBe(404);
  });

  it('measures the redelivery of an event its first gateway stored but never queued (it stopped between)', async () => {
    expect((await link(GITHUB_LINK)).status).toBe(200);
    const preview = (await store.findProject(linked.userId, 'http://127.0.0.1:4999/base/cart?step=1'))!;
    const key = `github:1500@${linked.id}`;
    await store.addForgeEvent({
      key,
      forge: 'github',
      linkProjectId: linked.id,
      previewProjectId: preview.id,
      previewUrl: preview.url,
      revision: { commit: SHA },
      receivedAt: new Date(Date.now() - 120_000),
    });
    const { body, headers } = githubDelivery(1500, 'http://127.0.0.1:4999/base/');
    const redelivered = await deliver('github', body, headers);
    expect(redelivered.status).toBe(200);
    const answer = forgeEventAnswerSchema.parse(redelivered.body);
    expect(answer).toEqual({ ok: 1, id: expect.any(String), previewUrl: preview.url });
    expect((await store.findForgeEvent(key))?.updateId).toBe((answer as { id: string }).id);
  });

  it('removes the link; no answer or log line ever held a secret', async () => {
    const removed = await call(`/v1/projects/repository?url=${encodeURIComponent(SHOP)}`, {
      method: 'DELETE',
      headers: { Authorization: token },
    });
    expect(removed.body).toEqual({ url: SHOP, removed: true });
    const gone = await call(`/v1/projects/repository?url=${encodeURIComponent(SHOP)}`, {
      headers: { Authorization: token },
    });
    expect(gone.status).toBe(404);
    expect(logLines.some((line) => line.includes('forge event refused'))).toBe(true);
    for (const secret of SECRETS) {
      expect(answers.filter((text) => text.includes(secret))).toEqual([]);
      expect(logLines.filter((line) => line.includes(secret))).toEqual([]);
    }
    const stored = JSON.stringify(await store.findForgeLink(linked.id));
    expect(stored).toBe('null');
  });
});

// `perfwatch start`'s shape: the embedded SQLite store and the in-process queue, no NATS.
describe('POST /v1/forge-events/{forge} on the embedded store', () => {
  it('queues one update per event there too, and answers its redelivery as a duplicate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perfwatch-forge-'));
    const sqlite = new SqliteStore({ path: join(dir, 'perfwatch.sqlite') });
    await sqlite.init();
    const local = await startGateway({
      localAgents: [],
      store: sqlite,
      logger: silentLogger,
      config: gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SHUTDOWN_READINESS_DELAY_MS: 0, ...FORGE_SETTINGS }),
    });
    try {
      const admin = createAdmin(sqlite);
      const { token: own } = await admin.createUser('embedded-forger');
      const project = await admin.addProject('embedded-forger', SHOP, { locations: ['london'], runs: 1 });
      const put = await fetch(`${local.http.url}/v1/projects/repository`, {
        method: 'PUT',
        headers: { Authorization: own, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: SHOP, ...GITHUB_LINK }),
      });
      expect(put.status).toBe(200);
      const { body, headers } = githubDelivery(2001, 'http://127.0.0.1:4999');
      const post = () =>
        fetch(`${local.http.url}/v1/forge-events/github`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...headers },
          body,
        });
      const first = (await (await post()).json()) as { id: string };
      expect(first).toEqual({ ok: 1, id: expect.any(String), previewUrl: 'http://127.0.0.1:4999/cart?step=1' });
      expect(await (await post()).json()).toEqual({ ok: 1, duplicate: true, id: first.id });
      expect((await sqlite.userBacklog(project.userId)).updates).toBe(1);
    } finally {
      await local.stop();
      await sqlite.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
