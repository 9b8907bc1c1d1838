import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoStore, SqliteStore, type Store } from '@perfwatch/gateway';
import { describeOnBothStores } from './store-backends.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

// Organisations and memberships (TeamsStore), and the organisation every user has of their own.
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('teams', (store) => {
  it('creates organisations, finds them by id and name, lists them by name; a name is taken once', async () => {
    const zeta = await store().createOrganisation({ name: 'zeta squad' });
    const alpha = await store().createOrganisation({ name: 'alpha squad' });
    expect(zeta).toMatchObject({ name: 'zeta squad', id: expect.stringMatching(/^[0-9a-f]{24}$/) });
    expect(zeta.createdAt).toBeInstanceOf(Date);
    expect(await store().findOrganisation(zeta.id)).toEqual(zeta);
    expect(await store().findOrganisationByName('alpha squad')).toEqual(alpha);
    expect(await store().findOrganisation(new ObjectId().toHexString())).toBeNull();
    expect(await store().findOrganisation('not an id')).toBeNull();
    expect(await store().findOrganisationByName('nobody')).toBeNull();
    await expect(store().createOrganisation({ name: 'zeta squad' })).rejects.toMatchObject({
      name: 'DuplicateError',
      message: 'organisation "zeta squad" exists',
    });
    const names = (await store().listOrganisations()).map((o) => o.name);
    expect(names.filter((n) => n.endsWith('squad'))).toEqual(['alpha squad', 'zeta squad']);
  });

  it('adds a member, changes their role and source, lists members and memberships oldest first, removes them', async () => {
    const org = await store().createOrganisation({ name: 'platform' });
    const other = await store().createOrganisation({ name: 'payments' });
    const [ana, ben] = [await store().createUser('ana'), await store().createUser('ben')];
    // A millisecond apart at least, so "oldest first" has one answer.
    await tick();
    await store().setMembership({ orgId: org.id, userId: ana.id, role: 'viewer', source: 'manual' });
    await tick();
    await store().setMembership({ orgId: org.id, userId: ben.id, role: 'editor', source: 'sso' });
    await tick();
    await store().setMembership({ orgId: other.id, userId: ana.id, role: 'admin', source: 'manual' });
    const first = (await store().findMembership(org.id, ana.id))!;
    expect(first).toMatchObject({ orgId: org.id, userId: ana.id, role: 'viewer', source: 'manual' });

    // A second set changes the one membership: its role and source, not when it began.
    await store().setMembership({ orgId: org.id, userId: ana.id, role: 'editor', source: 'sso' });
    expect(await store().findMembership(org.id, ana.id)).toEqual({ ...first, role: 'editor', source: 'sso' });
    expect((await store().listMembers(org.id)).map((m) => [m.userId, m.role])).toEqual([
      [ana.id, 'editor'],
      [ben.id, 'editor'],
    ]);
    // Her own organisation first: it was made with her.
    expect((await store().listMemberships(ana.id)).map((m) => [m.orgId, m.role])).toEqual([
      [ana.id, 'admin'],
      [org.id, 'editor'],
      [other.id, 'admin'],
    ]);

    expect(await store().removeMembership(org.id, ana.id)).toBe(true);
    expect(await store().removeMembership(org.id, ana.id)).toBe(false);
    expect(await store().findMembership(org.id, ana.id)).toBeNull();
    expect((await store().listMembers(org.id)).map((m) => m.userId)).toEqual([ben.id]);
    expect(await store().findMembership(other.id, ana.id)).not.toBeNull();
    expect(await store().listMembers('not an id')).toEqual([]);
    expect(await store().removeMembership('not an id', ana.id)).toBe(false);
  });

  it("revokes a removed member's tokens in that organisation, and only there", async () => {
    const org = await store().createOrganisation({ name: 'checkout' });
    const eli = await store().createUser('eli');
    await store().setMembership({ orgId: org.id, userId: eli.id, role: 'editor', source: 'manual' });
    const token = (prefix: string, orgId?: string) =>
      store().addToken({ prefix, userId: eli.id, digest: 'ab'.repeat(32), ...(orgId ? { orgId } : {}) });
    await token('eliThere', org.id);
    await token('eliOwn01', eli.id);
    await token('eliOwn02'); // made as tokens were before organisations: their user's own
    expect(await store().removeMembership(org.id, eli.id)).toBe(true);
    expect((await store().findToken('eliThere'))!.revokedAt).toBeInstanceOf(Date);
    expect((await store().findToken('eliOwn01'))!.revokedAt).toBeNull();
    expect((await store().findToken('eliOwn02'))!.revokedAt).toBeNull();
    // Taken back: the old token stays revoked.
    await store().setMembership({ orgId: org.id, userId: eli.id, role: 'editor', source: 'manual' });
    expect((await store().findToken('eliThere'))!.revokedAt).toBeInstanceOf(Date);
  });

  it("makes each user an organisation of their own, with the user's id and name and the user its admin", async () => {
    const user = await store().createUser('carla');
    expect(await store().findOrganisation(user.id)).toEqual({ id: user.id, name: 'carla', createdAt: user.createdAt });
    expect(await store().listMembers(user.id)).toEqual([
      { orgId: user.id, userId: user.id, role: 'admin', source: 'manual', createdAt: user.createdAt },
    ]);

    // Single sign-on's users belong only where the identity provider's claim puts them.
    const signedOn = await store().createUser('dora@example.com', { ownOrganisation: false });
    expect(await store().findOrganisation(signedOn.id)).toBeNull();
    expect(await store().listMemberships(signedOn.id)).toEqual([]);
  });

  it("refuses a user whose name is another organisation's, and keeps no part of them", async () => {
    await store().createOrganisation({ name: 'web-team' });
    await expect(store().createUser('web-team')).rejects.toMatchObject({
      name: 'DuplicateError',
      message: 'an organisation is named "web-team"',
    });
    expect(await store().findUserByName('web-team')).toBeNull();
    // Without an organisation of their own, the name is theirs to have.
    const user = await store().createUser('web-team', { ownOrganisation: false });
    expect((await store().findOrganisationByName('web-team'))!.id).not.toBe(user.id);
  });
});

/** Each user's own organisation and admin membership, as `store` has them: [name, organisation name, role]. */
async function ownOrganisations(store: Store, names: readonly string[]) {
  const rows = [];
  for (const name of names) {
    const user = (await store.findUserByName(name))!;
    const org = await store.findOrganisation(user.id);
    rows.push([name, org?.name ?? null, (await store.findMembership(user.id, user.id))?.role ?? null]);
  }
  return rows;
}

describe('teams: a SQLite file written before organisations', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'perfwatch-teams-migration-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives every user their organisation at its next open, once, keeping its tokens as they were', async () => {
    const path = join(dir, 'schema9.sqlite');
    const first = new SqliteStore({ path });
    await first.init();
    const eve = await first.createUser('eve');
    await first.createUser('finn');
    await first.addToken({ prefix: 'evetoken', userId: eve.id, digest: 'e'.repeat(64) });
    await first.close();
    // Back to what schema 9 wrote: no organisations, memberships, nor the columns of schema 10.
    const db = new DatabaseSync(path);
    db.exec('DROP TABLE memberships; DROP TABLE organisations; ALTER TABLE users DROP COLUMN own_organisation;');
    for (const column of ['org_id', 'scope', 'projects', 'label']) db.exec(`ALTER TABLE tokens DROP COLUMN ${column}`);
    db.exec("UPDATE meta SET value = '9' WHERE key = 'schema'");
    db.close();

    const again = new SqliteStore({ path });
    await again.init();
    try {
      expect(await ownOrganisations(again, ['eve', 'finn'])).toEqual([
        ['eve', 'eve', 'admin'],
        ['finn', 'finn', 'admin'],
      ]);
      expect((await again.findOrganisation(eve.id))!.createdAt).toEqual(eve.createdAt);
      expect(await again.findToken('evetoken')).toMatchObject({ userId: eve.id, orgId: eve.id, scope: 'admin' });
      expect((await again.listOrganisationTokens(eve.id)).map((t) => t.prefix)).toEqual(['evetoken']);
      // An admin taken out of an organisation that exists stays out; a user made without one gains none.
      await again.removeMembership(eve.id, eve.id);
      await again.createUser('gus@example.com', { ownOrganisation: false });
    } finally {
      await again.close();
    }

    const third = new SqliteStore({ path });
    await third.init();
    try {
      expect(await ownOrganisations(third, ['eve', 'finn', 'gus@example.com'])).toEqual([
        ['eve', 'eve', null],
        ['finn', 'finn', 'admin'],
        ['gus@example.com', null, null],
      ]);
      expect((await third.listOrganisations()).map((o) => o.name)).toEqual(['eve', 'finn']);
    } finally {
      await third.close();
    }
  });
});

describe('teams: a MongoDB database written before organisations', () => {
  const uri = inject('mongoUri');
  const dbName = `pwtest_${randomUUID().slice(0, 8)}`;
  let client: MongoClient;
  beforeAll(async () => {
    client = await new MongoClient(uri).connect();
  });
  afterAll(async () => {
    await client?.db(dbName).dropDatabase();
    await client?.close();
  });

  it('gives every user their organisation at init, two gateways starting at once making each one once', async () => {
    const db = client.db(dbName);
    const createdAt = new Date('2025-04-05T06:07:08.000Z');
    const [hana, ivo, jon] = [new ObjectId(), new ObjectId(), new ObjectId()];
    // As the last release wrote them: users and a token without organisation, scope or label.
    await db.collection('users').insertMany([
      { _id: hana, name: 'hana', createdAt },
      { _id: ivo, name: 'ivo', createdAt },
      { _id: jon, name: 'jon@example.com', createdAt, ownOrganisation: false },
    ]);
    const legacy = { prefix: 'hanatokn', userId: hana, digest: 'h'.repeat(64), createdAt, revokedAt: null };
    await db.collection('tokens').insertOne(legacy);

    const gateways = [new MongoStore({ uri, dbName }), new MongoStore({ uri, dbName })];
    await Promise.all(gateways.map((g) => g.init()));
    const [store] = gateways as [MongoStore, MongoStore];
    try {
      expect(await ownOrganisations(store, ['hana', 'ivo', 'jon@example.com'])).toEqual([
        ['hana', 'hana', 'admin'],
        ['ivo', 'ivo', 'admin'],
        ['jon@example.com', null, null],
      ]);
      expect(await db.collection('organisations').countDocuments()).toBe(2);
      expect(await db.collection('memberships').countDocuments()).toBe(2);
      expect(await store.findOrganisation(hana.toHexString())).toEqual({
        id: hana.toHexString(),
        name: 'hana',
        createdAt,
      });
      expect(await store.findToken('hanatokn')).toMatchObject({ orgId: hana.toHexString(), scope: 'admin' });
      expect((await store.listOrganisationTokens(hana.toHexString())).map((t) => t.prefix)).toEqual(['hanatokn']);
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
    }
  });
});
