import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BSON, MongoClient, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  gatewayConfigWith,
  MongoStore,
  SqliteStore,
  startGateway,
  type GatewayRuntime,
  type Store,
} from '@perfwatch/gateway';
import { silentLogger } from '../support/test-services.ts';

// Upgrading from the last release (0.1, commit e5ba1dc): the database that release wrote
// (test/fixtures/release-0.1, made by scripts/make-release-fixture.ts with the release's own
// code) opens with today's stores, and today's gateway answers every read the release answered
// from it as the release did; each user is now the admin of an organisation of their own.

const fixtureDir = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/release-0.1');

const answerSchema = z.object({
  user: z.enum(['alice', 'bob']),
  token: z.string(),
  path: z.string(),
  status: z.number().int(),
  body: z.unknown(),
});
const storeFixtureSchema = z.object({
  tokens: z.object({
    alice: z.object({ live: z.string(), expiring: z.string(), expired: z.string(), revoked: z.string() }),
    bob: z.object({ live: z.string(), revoked: z.string() }),
  }),
  answers: z.array(answerSchema).min(1),
});
type StoreFixture = z.infer<typeof storeFixtureSchema>;
const fixtureSchema = z.object({ release: z.string(), sqlite: storeFixtureSchema, mongo: storeFixtureSchema });

const dumpSchema = z.object({
  collections: z.record(
    z.string(),
    z.object({
      indexes: z.array(z.object({ name: z.string() }).loose()),
      documents: z.array(z.record(z.string(), z.unknown())),
    }),
  ),
});

const SHOP = 'https://shop.alice.example/';

let fixture: z.infer<typeof fixtureSchema>;
let dir: string;
beforeAll(async () => {
  fixture = fixtureSchema.parse(JSON.parse(await readFile(join(fixtureDir, 'fixture.json'), 'utf8')));
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-release-migration-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The SQLite file as the release left it, copied: the migration writes to the copy only. */
async function sqliteOfRelease(): Promise<Store> {
  const path = join(dir, 'perfwatch.sqlite');
  await copyFile(join(fixtureDir, 'perfwatch.sqlite'), path);
  const store = new SqliteStore({ path });
  await store.init();
  return store;
}

/** The release's MongoDB database, its documents and indexes as dumped, in a fresh database. */
async function mongoOfRelease(): Promise<Store> {
  const dump = dumpSchema.parse(
    BSON.EJSON.parse(await readFile(join(fixtureDir, 'mongo.ejson'), 'utf8'), { relaxed: false }),
  );
  const dbName = `pwtest_release_${randomUUID().slice(0, 8)}`;
  const client = new MongoClient(inject('mongoUri'));
  try {
    const db = client.db(dbName);
    for (const [name, { indexes, documents }] of Object.entries(dump.collections)) {
      await db.createCollection(name);
      const made = indexes.filter((index) => index.name !== '_id_').map(({ v: _v, ns: _ns, ...index }) => index);
      if (made.length > 0) await db.command({ createIndexes: name, indexes: made });
      if (documents.length > 0) await db.collection(name).insertMany(documents as Document[]);
    }
  } finally {
    await client.close();
  }
  const store = new MongoStore({ uri: inject('mongoUri'), dbName });
  await store.init();
  return store;
}

/** Today's gateway on the migrated store, without agents; its scheduler never leads (below). */
async function gatewayOn(store: Store): Promise<GatewayRuntime> {
  // Another replica holds the scheduler's lease: this gateway schedules and deletes nothing, so
  // what it answers is what the release left (alice's scheduled project is long due).
  expect(await store.acquireLease('scheduler', 'release-migration-test', 3_600_000)).toBe(true);
  return startGateway({
    localAgents: [],
    store,
    logger: silentLogger,
    config: gatewayConfigWith({ PORT: 0, HOST: '127.0.0.1', SHUTDOWN_READINESS_DELAY_MS: 0 }),
  });
}

const BACKENDS = [
  { backend: 'SQLite file', open: sqliteOfRelease, recorded: (): StoreFixture => fixture.sqlite },
  { backend: 'MongoDB database', open: mongoOfRelease, recorded: (): StoreFixture => fixture.mongo },
];

for (const { backend, open, recorded } of BACKENDS)
  describe(`the ${backend} of release 0.1`, () => {
    let store: Store;
    let gateway: GatewayRuntime;
    beforeAll(async () => {
      store = await open();
      gateway = await gatewayOn(store);
    });
    afterAll(async () => {
      await gateway?.stop();
      await store?.close();
    });

    const secret = (user: 'alice' | 'bob', name: string): string =>
      (recorded().tokens[user] as Record<string, string>)[name]!;
    const get = async (user: 'alice' | 'bob', token: string, path: string) => {
      const res = await fetch(`${gateway.http.url}${path}`, {
        headers: { Authorization: `Bearer ${secret(user, token)}` },
      });
      return { status: res.status, body: (await res.json()) as unknown };
    };

    it('keeps its users, each now the admin of an organisation of their own with the same id', async () => {
      const users = await store.listUsers();
      expect(users.map((u) => u.name).sort()).toEqual(['alice', 'bob']);
      for (const user of users) {
        expect(await store.findOrganisation(user.id)).toMatchObject({ id: user.id, name: user.name });
        expect(await store.findMembership(user.id, user.id)).toMatchObject({ role: 'admin' });
        expect((await store.listMemberships(user.id)).map((m) => m.orgId)).toEqual([user.id]);
      }
    });

    it('keeps the tokens: live ones act for their user in its organisation as admin, the revoked and the expired are refused', async () => {
      const alice = (await store.findUserByName('alice'))!;
      const tokens = await store.listTokens(alice.id);
      expect(tokens).toHaveLength(4);
      for (const token of tokens) expect(token).toMatchObject({ userId: alice.id, orgId: alice.id, scope: 'admin' });
      expect(tokens.filter((t) => t.revokedAt !== null)).toHaveLength(1);
      expect(tokens.map((t) => t.expiresAt?.toISOString() ?? null).sort()).toEqual([
        '2026-11-25T00:00:00.000Z',
        '2099-01-01T00:00:00.000Z',
        null,
        null,
      ]);

      for (const [user, name] of [
        ['alice', 'live'],
        ['alice', 'expiring'],
        ['bob', 'live'],
      ] as const)
        expect((await get(user, name, '/v1/projects')).status, `${user}'s ${name} token`).toBe(200);
      const expired = await get('alice', 'expired', '/v1/projects');
      expect(expired).toMatchObject({ status: 401, body: { status: 'UNAUTHORIZED' } });
      expect(JSON.stringify(expired.body)).toMatch(/expired/);
      for (const user of ['alice', 'bob'] as const)
        expect(await get(user, 'revoked', '/v1/projects')).toMatchObject({
          status: 401,
          body: { status: 'UNAUTHORIZED' },
        });
    });

    it('keeps the projects with their budgets and schedules', async () => {
      const { body } = await get('alice', 'live', '/v1/projects');
      expect(body).toMatchObject({
        projects: [
          { url: 'https://blog.alice.example/', locations: ['frankfurt'], runs: 1, schedule: null },
          { url: SHOP, locations: ['london', 'tokyo'], runs: 3, schedule: '0 6 * * *' },
        ],
      });
      expect((await get('alice', 'live', `/v1/budgets?url=${encodeURIComponent(SHOP)}`)).body).toEqual({
        url: SHOP,
        budgets: { performance: 80, lcp: 2500, cls: 0.1 },
        maxRegression: { performance: 5, lcp: 10 },
      });
      expect((await get('bob', 'live', '/v1/projects')).body).toMatchObject({
        projects: [{ url: 'https://bob.example/docs/', schedule: '30 2 * * 1' }],
      });
    });

    it('answers every read the release answered as it did: snapshots, KPI records, update records, annotations, webhooks, another user’s project 404', async () => {
      // A recorded answer holds of each Lighthouse result its scores and metric values only, and
      // today's answer may carry fields the release had not: each must hold all that was recorded.
      const successes = recorded().answers.filter((a) => a.status !== 401);
      expect(successes.map((a) => a.path)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^\/v1\/audit/), expect.stringMatching(/^\/v1\/overview/)]),
      );
      for (const { user, token, path, status, body } of successes) {
        const now = await get(user, token, path);
        expect(now.status, `${user} ${path}`).toBe(status);
        expect(now.body, `${user} ${path}`).toMatchObject(body as object);
      }
    });
  });
