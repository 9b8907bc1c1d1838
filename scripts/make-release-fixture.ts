/**
 * Makes test/fixtures/release-0.1: a database of each store as the last release (0.1, commit
 * e5ba1dc) writes it, and what that release's API answered from it, for
 * test/integration/release-migration.test.ts to open with today's code. It is run against the
 * release's own checkout: every store, admin and API module comes from there, imported by path,
 * with that checkout's node_modules:
 *
 *   git worktree add /tmp/perfwatch-0.1 e5ba1dc && (cd /tmp/perfwatch-0.1 && npm ci)
 *   node scripts/make-release-fixture.ts /tmp/perfwatch-0.1
 *
 * FerretDB is this checkout's (.tools/bin/ferretdb, fetched by scripts/setup.sh). The tokens it
 * issues are written in the clear to fixture.json: secrets of the fixture only.
 */
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BSON, MongoClient } from 'mongodb';
import { pino } from 'pino';

const RELEASE_COMMIT = 'e5ba1dc';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'test/fixtures/release-0.1');
const releaseRoot = resolve(process.argv[2] ?? '');

// ---- the release's modules, as far as this script uses them --------------------------------

type Device = 'mobile' | 'desktop';
type Location = 'london' | 'tokyo' | 'frankfurt';
interface UserRecord {
  id: string;
  name: string;
}
interface ProjectRecord {
  id: string;
  userId: string;
  url: string;
  runs: number;
}
type UpdateType = 'manual' | 'scheduled' | 'ci';
type Revision = { commit: string; pullRequest?: number; branch?: string };
interface ReleaseStore {
  init(): Promise<void>;
  close(): Promise<void>;
  findUserByName(name: string): Promise<UserRecord | null>;
  listProjects(userId?: string): Promise<ProjectRecord[]>;
  saveSnapshot(snapshot: {
    project: ProjectRecord;
    updateId: string;
    date: Date;
    updateType: UpdateType;
    results: unknown[];
    revision?: Revision;
  }): Promise<Date>;
  createUpdate(update: {
    id: string;
    userId: string;
    projectId: string;
    url: string;
    devices: Device[];
    locations: Location[];
    updateType: UpdateType;
    runs: number;
    revision?: Revision;
  }): Promise<void>;
  setUpdateState(
    id: string,
    state: { status: 'running' } | { status: 'done'; date: Date } | { status: 'failed'; reason: string },
  ): Promise<void>;
  addAnnotation(annotation: { projectId: string; date: Date; text: string; link: string | null }): Promise<unknown>;
}
interface ReleaseAdmin {
  createUser(name: string): Promise<{ token: string; prefix: string }>;
  createToken(name: string, options?: { expiresAt?: Date | null }): Promise<{ token: string; prefix: string }>;
  revokeToken(prefix: string): Promise<void>;
  addProject(
    name: string,
    url: string,
    options: { locations: Location[]; runs: number; schedule?: string | null },
  ): Promise<ProjectRecord>;
  setBudgets(
    name: string,
    url: string,
    budgets: { budgets: Record<string, number>; maxRegression: Record<string, number> },
  ): Promise<unknown>;
  addWebhook(
    name: string,
    targetUrl: string,
    options?: { project?: string; format?: 'json' | 'slack' },
  ): Promise<unknown>;
}
interface ReleaseGateway {
  SqliteStore: new (options: { path: string }) => ReleaseStore;
  MongoStore: new (options: { uri: string; dbName: string }) => ReleaseStore;
  createAdmin(store: ReleaseStore, options: { targetGuard: unknown }): ReleaseAdmin;
  gatewayConfigWith(values: Record<string, unknown>): unknown;
  startGateway(options: {
    localAgents: [];
    store: ReleaseStore;
    logger: unknown;
    config: unknown;
  }): Promise<{ http: { url: string }; stop(): Promise<void> }>;
}
interface Release {
  gateway: ReleaseGateway;
  webhookTargets: (allowTargets: string) => unknown;
  lighthouseKpis: (lhr: unknown) => unknown[];
  loadLhr: (device: Device, run: 1 | 2 | 3) => unknown;
  newCell: (cell: Record<string, unknown>) => unknown;
  startFerretDb: (options: { binary: string; dir: string }) => Promise<{ url: string; stop(): Promise<void> }>;
}

async function loadRelease(): Promise<Release> {
  const head = execFileSync('git', ['-C', releaseRoot, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  if (!head.startsWith(RELEASE_COMMIT))
    throw new Error(`${releaseRoot} is at ${head}, not the release ${RELEASE_COMMIT}`);
  const from = async (path: string): Promise<Record<string, unknown>> =>
    (await import(pathToFileURL(join(releaseRoot, path)).href)) as Record<string, unknown>;
  const common = await from('common/src/index.ts');
  return {
    gateway: (await from('gateway/src/index.ts')) as unknown as ReleaseGateway,
    webhookTargets: (await from('gateway/src/alerts/webhook-targets.ts'))[
      'createWebhookTargets'
    ] as Release['webhookTargets'],
    lighthouseKpis: common['lighthouseKpis'] as Release['lighthouseKpis'],
    loadLhr: (await from('test/support/lhr-fixtures.ts'))['loadLhr'] as Release['loadLhr'],
    newCell: (await from('test/support/new-cells.ts'))['newCell'] as Release['newCell'],
    startFerretDb: (await from('test/support/local-servers.ts'))['startFerretDb'] as Release['startFerretDb'],
  };
}

// ---- what the database holds ------------------------------------------------------------

const SHOP = 'https://shop.alice.example/';
const BLOG = 'https://blog.alice.example/';
const DOCS = 'https://bob.example/docs/';

/** The snapshots: which project, when, how, and its cells (device, location, which captured run). */
const SNAPSHOTS: ReadonlyArray<{
  url: string;
  date: string;
  updateType: 'manual' | 'scheduled' | 'ci';
  revision?: { commit: string; pullRequest: number; branch: string };
  cells: Array<[Device, Location, 1 | 2 | 3]>;
}> = [
  {
    url: SHOP,
    date: '2026-11-20T08:00:00Z',
    updateType: 'manual',
    cells: [
      ['mobile', 'london', 1],
      ['desktop', 'london', 1],
    ],
  },
  {
    url: SHOP,
    date: '2026-11-21T06:00:00Z',
    updateType: 'scheduled',
    cells: [
      ['mobile', 'london', 2],
      ['mobile', 'tokyo', 3],
      ['desktop', 'london', 2],
    ],
  },
  {
    url: SHOP,
    date: '2026-11-22T10:15:30Z',
    updateType: 'ci',
    revision: { commit: '4f2a9c1e0b7d', pullRequest: 12, branch: 'checkout-v2' },
    cells: [['mobile', 'london', 3]],
  },
  { url: BLOG, date: '2026-11-23T09:00:00Z', updateType: 'manual', cells: [['desktop', 'frankfurt', 3]] },
  { url: DOCS, date: '2026-11-24T02:30:00Z', updateType: 'scheduled', cells: [['mobile', 'london', 2]] },
];

/** The updates' ids, fixed (the API takes update ids of the form /v1/update?mode=async gives). */
const updateIdOf = (n: number) => `7e1ea5e0-0001-4000-8000-${n.toString(16).padStart(12, '0')}`;
const FAILED_UPDATE = updateIdOf(255);

/** The fixture's tokens in the clear: secrets of this fixture only. */
interface FixtureTokens {
  alice: { live: string; expiring: string; expired: string; revoked: string };
  bob: { live: string; revoked: string };
}

/** Users, tokens, projects with budgets and schedules, snapshots, an annotation and webhooks. */
async function fill(release: Release, store: ReleaseStore): Promise<FixtureTokens> {
  const admin = release.gateway.createAdmin(store, { targetGuard: release.webhookTargets('127.0.0.0/8') });
  const alice = (await admin.createUser('alice')).token;
  const bob = (await admin.createUser('bob')).token;
  const tokens: FixtureTokens = {
    alice: {
      live: alice,
      expiring: (await admin.createToken('alice', { expiresAt: new Date('2099-01-01T00:00:00Z') })).token,
      expired: (await admin.createToken('alice', { expiresAt: new Date('2026-11-25T00:00:00Z') })).token,
      revoked: await revokedToken(admin, 'alice'),
    },
    bob: { live: bob, revoked: await revokedToken(admin, 'bob') },
  };
  await admin.addProject('alice', SHOP, { locations: ['london', 'tokyo'], runs: 3, schedule: '0 6 * * *' });
  await admin.setBudgets('alice', SHOP, {
    budgets: { performance: 80, lcp: 2500, cls: 0.1 },
    maxRegression: { performance: 5, lcp: 10 },
  });
  await admin.addProject('alice', BLOG, { locations: ['frankfurt'], runs: 1 });
  await admin.addProject('bob', DOCS, { locations: ['london'], runs: 2, schedule: '30 2 * * 1' });
  await admin.setBudgets('bob', DOCS, { budgets: { tbt: 300 }, maxRegression: {} });
  await admin.addWebhook('alice', 'http://127.0.0.1:9/alice-shop', { project: SHOP });
  await admin.addWebhook('bob', 'http://127.0.0.1:9/bob', { format: 'slack' });

  const projects = new Map<string, ProjectRecord>();
  for (const name of ['alice', 'bob']) {
    const user = (await store.findUserByName(name))!;
    for (const project of await store.listProjects(user.id)) projects.set(project.url, project);
  }
  for (const [index, { url, date, updateType, revision, cells }] of SNAPSHOTS.entries()) {
    // Each snapshot as an update writes it: the update's record, its snapshot, the record done.
    const project = projects.get(url)!;
    const id = updateIdOf(index + 1);
    await store.createUpdate({
      id,
      userId: project.userId,
      projectId: project.id,
      url,
      devices: [...new Set(cells.map(([device]) => device))],
      locations: [...new Set(cells.map(([, location]) => location))],
      updateType,
      runs: project.runs,
      ...(revision ? { revision } : {}),
    });
    await store.setUpdateState(id, { status: 'running' });
    const stored = await store.saveSnapshot({
      project,
      updateId: id,
      date: new Date(date),
      updateType,
      results: cells.map(([device, location, run]) => measuredCell(release, device, location, run)),
      ...(revision ? { revision } : {}),
    });
    await store.setUpdateState(id, { status: 'done', date: stored });
  }
  const docs = projects.get(DOCS)!;
  await store.createUpdate({
    id: FAILED_UPDATE,
    userId: docs.userId,
    projectId: docs.id,
    url: DOCS,
    devices: ['mobile', 'desktop'],
    locations: ['london'],
    updateType: 'manual',
    runs: docs.runs,
  });
  await store.setUpdateState(FAILED_UPDATE, { status: 'failed', reason: 'no agent answered in london' });
  await store.addAnnotation({
    projectId: projects.get(SHOP)!.id,
    date: new Date('2026-11-21T12:00:00Z'),
    text: 'checkout v2 deployed',
    link: 'https://git.example/alice/shop/releases/2.4.0',
  });
  return tokens;
}

async function revokedToken(admin: ReleaseAdmin, name: string): Promise<string> {
  const { token, prefix } = await admin.createToken(name);
  await admin.revokeToken(prefix);
  return token;
}

/** A cell from a real Lighthouse result of the release's fixtures, as the release's tests store one. */
function measuredCell(release: Release, device: Device, location: Location, run: 1 | 2 | 3): unknown {
  const lighthouse = release.loadLhr(device, run);
  return release.newCell({
    device,
    location,
    median: 1,
    runs: [],
    lighthouse,
    crux: { url: null },
    elementCount: 400 + run,
    kpis: release.lighthouseKpis(lighthouse),
  });
}

// ---- what the release's API answered ------------------------------------------------------

/** One request and the release's answer (its status, and its body as recorded: see `kept`). */
interface Answer {
  user: 'alice' | 'bob';
  /** Which of the user's tokens (FixtureTokens) asked. */
  token: string;
  path: string;
  status: number;
  body: unknown;
}

/**
 * The release's answers to reads of everything the fixture holds, from a gateway of the release
 * on `store`: what today's gateway must still answer (as a subset: it may add fields).
 */
async function recordAnswers(release: Release, store: ReleaseStore, tokens: FixtureTokens): Promise<Answer[]> {
  const { gateway } = release;
  const runtime = await gateway.startGateway({
    localAgents: [],
    store,
    logger: pino({ level: 'silent' }),
    config: gateway.gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SHUTDOWN_READINESS_DELAY_MS: 0 }),
  });
  const answers: Answer[] = [];
  const ask = async (user: Answer['user'], token: string, path: string) => {
    const secret = (tokens[user] as Record<string, string>)[token]!;
    const res = await fetch(`${runtime.http.url}${path}`, { headers: { Authorization: `Bearer ${secret}` } });
    answers.push({ user, token, path, status: res.status, body: kept(await res.json()) });
  };
  try {
    for (const user of ['alice', 'bob'] as const)
      for (const token of Object.keys(tokens[user])) await ask(user, token, '/v1/projects');
    for (const [user, urls] of [
      ['alice', [SHOP, BLOG]],
      ['bob', [DOCS]],
    ] as const) {
      const token = 'live';
      await ask(user, token, '/v1/webhooks');
      await ask(user, token, '/v1/overview?startDate=2026-11-01&endDate=2026-11-30');
      for (const url of urls) {
        const q = `url=${encodeURIComponent(url)}`;
        for (const read of ['budgets', 'annotations', 'updates']) await ask(user, token, `/v1/${read}?${q}`);
        for (const { date } of SNAPSHOTS.filter((s) => s.url === url))
          await ask(user, token, `/v1/audit?${q}&date=${date.slice(0, 19)}`);
      }
    }
    for (const [index, { url }] of SNAPSHOTS.entries())
      await ask(url === DOCS ? 'bob' : 'alice', 'live', `/v1/updates/${updateIdOf(index + 1)}`);
    await ask('bob', 'live', `/v1/updates/${FAILED_UPDATE}`);
    // Tenancy: another user's project is not found.
    await ask('bob', 'live', `/v1/audit?url=${encodeURIComponent(SHOP)}&date=2026-11-20T08:00:00`);
  } finally {
    await runtime.stop();
  }
  return answers;
}

/**
 * An answer as recorded: whole, but of each Lighthouse result only its identity, category
 * scores and metric values (a result is ~180 kB; today's answer must still hold these).
 */
function kept(value: unknown, key?: string): unknown {
  if (Array.isArray(value)) return value.map((v) => kept(v));
  if (value === null || typeof value !== 'object') return value;
  if (key === 'lighthouse') return keptResult(value as Record<string, unknown>);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, kept(v, k)]));
}

function keptResult(lhr: Record<string, unknown>): Record<string, unknown> {
  const categories = (lhr['categories'] ?? {}) as Record<string, { score: number | null }>;
  const audits = (lhr['audits'] ?? {}) as Record<string, { numericValue?: number }>;
  return {
    lighthouseVersion: lhr['lighthouseVersion'],
    requestedUrl: lhr['requestedUrl'],
    fetchTime: lhr['fetchTime'],
    categories: Object.fromEntries(Object.entries(categories).map(([id, c]) => [id, { score: c.score }])),
    audits: Object.fromEntries(
      Object.entries(audits)
        .filter(([, a]) => typeof a.numericValue === 'number')
        .map(([id, a]) => [id, { numericValue: a.numericValue }]),
    ),
  };
}

// ---- each store -----------------------------------------------------------------------------

async function sqliteFixture(release: Release, work: string) {
  await mkdir(work, { recursive: true });
  const path = join(work, 'perfwatch.sqlite');
  const store = new release.gateway.SqliteStore({ path });
  await store.init();
  const tokens = await fill(release, store);
  await store.close();
  await copyFile(path, join(out, 'perfwatch.sqlite'));
  // The release's gateway reads a copy: its scheduler's lease is no part of the fixture.
  const copy = join(work, 'answers.sqlite');
  await copyFile(path, copy);
  const reader = new release.gateway.SqliteStore({ path: copy });
  await reader.init();
  try {
    return { tokens, answers: await recordAnswers(release, reader, tokens) };
  } finally {
    await reader.close();
  }
}

async function mongoFixture(release: Release, work: string) {
  const ferret = await release.startFerretDb({ binary: join(root, '.tools/bin/ferretdb'), dir: work });
  const dbName = 'perfwatch_release_0_1';
  const client = new MongoClient(ferret.url);
  try {
    const store = new release.gateway.MongoStore({ uri: ferret.url, dbName });
    await store.init();
    const tokens = await fill(release, store);
    await store.close();
    await writeFile(join(out, 'mongo.ejson'), await dumpDatabase(client, dbName));
    // Read after the dump: the scheduler's lease the gateway takes is no part of the fixture.
    const reader = new release.gateway.MongoStore({ uri: ferret.url, dbName });
    await reader.init();
    try {
      return { tokens, answers: await recordAnswers(release, reader, tokens) };
    } finally {
      await reader.close();
    }
  } finally {
    await client.close();
    await ferret.stop();
  }
}

/** Every collection of the database, its documents and indexes, as canonical Extended JSON. */
async function dumpDatabase(client: MongoClient, dbName: string): Promise<string> {
  const db = client.db(dbName);
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
  const collections: Record<string, { indexes: unknown[]; documents: unknown[] }> = {};
  for (const name of names) {
    const collection = db.collection(name);
    collections[name] = {
      indexes: await collection.listIndexes().toArray(),
      documents: await collection.find().sort({ _id: 1 }).toArray(),
    };
  }
  return `${BSON.EJSON.stringify({ release: RELEASE_COMMIT, database: dbName, collections }, undefined, 1, { relaxed: false })}\n`;
}

const release = await loadRelease();
await mkdir(out, { recursive: true });
const work = await mkdtemp(join(tmpdir(), 'perfwatch-release-fixture-'));
try {
  const sqlite = await sqliteFixture(release, join(work, 'sqlite'));
  const mongo = await mongoFixture(release, join(work, 'mongo'));
  const fixture = { release: RELEASE_COMMIT, madeAt: new Date().toISOString(), sqlite, mongo };
  await writeFile(join(out, 'fixture.json'), `${JSON.stringify(fixture, null, 1)}\n`);
} finally {
  await rm(work, { recursive: true, force: true });
}
