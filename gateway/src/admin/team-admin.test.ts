import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite-store.ts';
import { createAdmin, type Admin } from './admin.ts';

// Organisations, members and the tokens they may be given, against the embedded store in memory.

let store: SqliteStore;
let admin: Admin;

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  admin = createAdmin(store);
});

afterEach(async () => {
  await store.close();
});

describe('organisations and members', () => {
  it('adds an organisation once; a name a user has (their own organisation) is taken too', async () => {
    await admin.createUser('ops');
    expect((await admin.teams.addOrganisation('web-squad')).name).toBe('web-squad');
    await expect(admin.teams.addOrganisation('web-squad')).rejects.toThrow('an organisation is named "web-squad"');
    await expect(admin.teams.addOrganisation('ops')).rejects.toThrow('an organisation is named "ops"');
    await expect(admin.teams.addOrganisation('two words')).rejects.toThrow(/1–100 letters, digits/);
    // And a user may not take an organisation's name.
    await expect(admin.createUser('web-squad')).rejects.toThrow('an organisation is named "web-squad"');
  });

  it('adds members, changes their roles, and keeps an admin in every organisation', async () => {
    await admin.createUser('ana');
    await admin.createUser('ben');
    await admin.teams.addOrganisation('squad');
    expect(await admin.teams.setMember('squad', 'ana', 'admin')).toEqual({ was: null });
    expect(await admin.teams.setMember('squad', 'ben', 'viewer')).toEqual({ was: null });
    await expect(admin.teams.setMember('squad', 'ana', 'editor')).rejects.toThrow(
      'ana is the last admin of squad and cannot be demoted; make another member admin first',
    );
    await expect(admin.teams.removeMember('squad', 'ana')).rejects.toThrow(/last admin of squad and cannot be removed/);
    expect(await admin.teams.setMember('squad', 'ben', 'admin')).toEqual({ was: 'viewer' });
    expect(await admin.teams.setMember('squad', 'ana', 'editor')).toEqual({ was: 'admin' });
    // Added in the same millisecond, maybe: by name here.
    const members = (await admin.teams.members('squad')).sort((a, b) => a.user.localeCompare(b.user));
    expect(members.map((m) => [m.user, m.role, m.source])).toEqual([
      ['ana', 'editor', 'manual'],
      ['ben', 'admin', 'manual'],
    ]);
    await admin.teams.removeMember('squad', 'ana');
    await expect(admin.teams.removeMember('squad', 'ana')).rejects.toThrow('ana is not a member of squad');
    await expect(admin.teams.setMember('nowhere', 'ana', 'viewer')).rejects.toThrow('no organisation named "nowhere"');
    await expect(admin.teams.setMember('squad', 'nobody', 'viewer')).rejects.toThrow('no user named "nobody"');
  });
});

describe('tokens in an organisation', () => {
  beforeEach(async () => {
    await admin.createUser('lead');
    await admin.createUser('dev');
    await admin.createUser('guest');
    await admin.teams.addOrganisation('shop');
    await admin.teams.setMember('shop', 'lead', 'admin');
    await admin.teams.setMember('shop', 'dev', 'editor');
    await admin.teams.setMember('shop', 'guest', 'viewer');
    const shop = (await store.findOrganisationByName('shop'))!;
    await store.addProject({
      userId: shop.id,
      url: 'https://shop.example/',
      domain: 'shop.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
  });

  it("makes a token as before without options: its user's own organisation, admin, shown as plain", async () => {
    const issued = await admin.createToken('dev');
    expect(issued).toMatchObject({ org: 'dev', scope: 'admin', projects: null, label: null, plain: true });
    expect(await store.findToken(issued.prefix)).toMatchObject({ orgId: issued.user.id, scope: 'admin' });
  });

  it("gives a token the member's role by default, and never more", async () => {
    expect(await admin.createToken('guest', { org: 'shop' })).toMatchObject({ scope: 'read', plain: false });
    expect(await admin.createToken('dev', { org: 'shop' })).toMatchObject({ scope: 'editor' });
    await expect(
      admin.createToken('guest', { org: 'shop', scope: 'ci', projects: ['https://shop.example/'] }),
    ).rejects.toThrow('a ci token needs the editor role; guest is viewer of shop');
    await expect(admin.createToken('dev', { org: 'shop', scope: 'admin' })).rejects.toThrow(
      'a admin token needs the admin role; dev is editor of shop',
    );
    await expect(admin.createToken('dev', { org: 'lead' })).rejects.toThrow('dev is not a member of lead');
    await expect(admin.createToken('dev', { org: 'nowhere' })).rejects.toThrow('no organisation named "nowhere"');
  });

  it('holds a ci token to projects of its organisation, as they are stored', async () => {
    const issued = await admin.createToken('dev', {
      org: 'shop',
      scope: 'ci',
      projects: ['https://Shop.Example', 'https://shop.example/'],
      label: 'CI of the shop',
    });
    const shop = (await store.findOrganisationByName('shop'))!;
    expect(await store.findToken(issued.prefix)).toMatchObject({
      userId: issued.user.id,
      orgId: shop.id,
      scope: 'ci',
      projects: ['https://shop.example/'],
      label: 'CI of the shop',
    });
    await expect(admin.createToken('dev', { org: 'shop', scope: 'ci' })).rejects.toThrow(/give --projects URL,URL/);
    await expect(
      admin.createToken('dev', { org: 'shop', scope: 'ci', projects: ['https://blog.example/'] }),
    ).rejects.toThrow('shop has no project at https://blog.example/');
    await expect(
      admin.createToken('dev', { org: 'shop', scope: 'editor', projects: ['https://shop.example/'] }),
    ).rejects.toThrow('--projects goes with --scope ci only');
    await expect(admin.createToken('dev', { org: 'shop', label: 'x'.repeat(201) })).rejects.toThrow(
      /--label is longer/,
    );

    expect((await admin.teams.tokens('shop')).map((t) => [t.user, t.scope, t.label])).toEqual([
      ['dev', 'ci', 'CI of the shop'],
    ]);
  });

  it('refuses a token without --org for a user who has no organisation of their own', async () => {
    await store.createUser('sso-user', { ownOrganisation: false });
    await expect(admin.createToken('sso-user')).rejects.toThrow('sso-user has no organisation of their own');
  });
});
