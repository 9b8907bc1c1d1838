import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoStore, SqliteStore, type Store } from '@perfwatch/gateway';
import { describeOnBothStores } from './store-backends.ts';

// Users and their tokens (AccountsStore), and the notes kept beside the data (StoreBase).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('accounts', (store) => {
  it('keeps users and token digests, finds a token by prefix, revokes it', async () => {
    const user = await store().createUser('alice');
    await expect(store().createUser('alice')).rejects.toThrow(/exists/);
    await store().addToken({ prefix: 'abcdEFGH', userId: user.id, digest: 'a'.repeat(64) });
    expect(await store().findToken('abcdEFGH')).toMatchObject({
      userId: user.id,
      digest: 'a'.repeat(64),
      revokedAt: null,
    });
    expect(await store().revokeToken('abcdEFGH')).toBe(true);
    expect(await store().revokeToken('abcdEFGH')).toBe(false);
    expect((await store().findToken('abcdEFGH'))!.revokedAt).toBeInstanceOf(Date);
    expect(await store().findToken('zzzzzzzz')).toBeNull();
  });

  it("keeps a token's expiry beside its digest (none: it never expires) and lists a user's tokens", async () => {
    const user = await store().createUser('expiring');
    const other = await store().createUser('not-expiring');
    const expiresAt = new Date('2031-05-06T07:08:09.123Z');
    await store().addToken({ prefix: 'expires1', userId: user.id, digest: 'b'.repeat(64), expiresAt });
    await store().addToken({ prefix: 'forever1', userId: user.id, digest: 'c'.repeat(64) });
    await store().addToken({ prefix: 'others01', userId: other.id, digest: 'd'.repeat(64), expiresAt: null });
    expect((await store().findToken('expires1'))!.expiresAt).toEqual(expiresAt);
    expect((await store().findToken('forever1'))!.expiresAt).toBeNull();
    await store().revokeToken('forever1');
    const listed = await store().listTokens(user.id);
    expect(listed.map((t) => [t.prefix, t.expiresAt, t.revokedAt !== null])).toEqual([
      ['expires1', expiresAt, false],
      ['forever1', null, true],
    ]);
    expect((await store().listTokens(other.id)).map((t) => t.prefix)).toEqual(['others01']);
  });

  it("keeps a token's organisation, scope, projects and label; a token given none acts for its user's organisation as admin", async () => {
    const owner = await store().createUser('scoped-owner');
    const member = await store().createUser('scoped-member');
    const org = await store().createOrganisation({ name: 'scoped-org' });
    const projects = ['https://shop.example/', 'https://blog.example/'];
    await store().addToken({
      prefix: 'citoken1',
      userId: member.id,
      digest: 'e'.repeat(64),
      orgId: org.id,
      scope: 'ci',
      projects,
      label: 'CI of the shop',
    });
    await store().addToken({ prefix: 'plain001', userId: owner.id, digest: 'f'.repeat(64) });
    // Only a ci token lists projects: any other scope acts on them all.
    await store().addToken({
      prefix: 'reader01',
      userId: owner.id,
      digest: '0'.repeat(64),
      orgId: org.id,
      scope: 'read',
      projects,
    });
    expect(await store().findToken('citoken1')).toMatchObject({
      userId: member.id,
      orgId: org.id,
      scope: 'ci',
      projects,
      label: 'CI of the shop',
    });
    expect(await store().findToken('plain001')).toMatchObject({
      userId: owner.id,
      orgId: owner.id,
      scope: 'admin',
      projects: null,
      label: null,
    });
    expect(await store().findToken('reader01')).toMatchObject({ scope: 'read', projects: null, label: null });

    // An organisation's tokens are its members' made in it, not their tokens elsewhere.
    expect((await store().listOrganisationTokens(org.id)).map((t) => t.prefix)).toEqual(['citoken1', 'reader01']);
    expect((await store().listOrganisationTokens(owner.id)).map((t) => t.prefix)).toEqual(['plain001']);
    expect((await store().listTokens(owner.id)).map((t) => t.prefix)).toEqual(['plain001', 'reader01']);
  });

  it('keeps notes by key, the last value written', async () => {
    expect(await store().readNote('contract-note')).toBeNull();
    await store().writeNote('contract-note', 'first');
    await store().writeNote('contract-note', 'second');
    expect(await store().readNote('contract-note')).toBe('second');
  });
});

// Tokens as the last release wrote them: no organisation, scope, projects nor label.
describe('accounts: tokens made before organisations', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'perfwatch-legacy-tokens-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** What a legacy token reads back as, and which organisation lists it, on `store`. */
  async function legacyReadBack(store: Store, userId: string) {
    expect(await store.findToken('legacy01')).toMatchObject({
      userId,
      orgId: userId,
      scope: 'admin',
      projects: null,
      label: null,
      expiresAt: null,
    });
    expect((await store.listOrganisationTokens(userId)).map((t) => t.prefix)).toEqual(['legacy01', 'newer001']);
  }

  it("the SQLite store reads one as its user's organisation's admin token, and lists it there", async () => {
    const path = join(dir, 'legacy.sqlite');
    const store = new SqliteStore({ path });
    await store.init();
    try {
      const user = await store.createUser('legacy-sqlite');
      const raw = new DatabaseSync(path);
      raw
        .prepare('INSERT INTO tokens (prefix, user_id, digest, created_at) VALUES (?, ?, ?, ?)')
        .run('legacy01', user.id, 'a'.repeat(64), Date.now() - 60_000);
      raw.close();
      await store.addToken({ prefix: 'newer001', userId: user.id, digest: 'b'.repeat(64) });
      await legacyReadBack(store, user.id);
    } finally {
      await store.close();
    }
  });

  it("the MongoDB store reads one as its user's organisation's admin token, and lists it there", async () => {
    const uri = inject('mongoUri');
    const dbName = `pwtest_${randomUUID().slice(0, 8)}`;
    const client = await new MongoClient(uri).connect();
    const store = new MongoStore({ uri, dbName });
    await store.init();
    try {
      const user = await store.createUser('legacy-mongo');
      await client
        .db(dbName)
        .collection('tokens')
        .insertOne({
          prefix: 'legacy01',
          userId: new ObjectId(user.id),
          digest: 'a'.repeat(64),
          createdAt: new Date(Date.now() - 60_000),
          revokedAt: null,
        });
      await store.addToken({ prefix: 'newer001', userId: user.id, digest: 'b'.repeat(64) });
      await legacyReadBack(store, user.id);
    } finally {
      await store.close();
      await client.db(dbName).dropDatabase();
      await client.close();
    }
  });
});
