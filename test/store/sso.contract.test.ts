import { ObjectId } from 'mongodb';
import { expect, it } from 'vitest';
import type { Store } from '@perfwatch/gateway';
import { describeOnBothStores } from './store-backends.ts';

type SessionRecord = Parameters<Store['addSession']>[0];

// Single sign-on's sessions (by the digest of their id) and provider identities (SsoStore), on
// both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('sso', (store) => {
  const session = (digest: string, userId: string, orgId: string, expiresAt: Date): SessionRecord => ({
    digest,
    userId,
    userName: 'ana@example.test',
    orgId,
    csrfToken: `csrf-${digest}`,
    createdAt: new Date(expiresAt.getTime() - 3_600_000),
    expiresAt,
  });

  it('keeps a session by its digest, moves it to another organisation, and removes it', async () => {
    const ana = await store().createUser('ana-session');
    const org = await store().createOrganisation({ name: 'session squad' });
    const live = session('a'.repeat(64), ana.id, ana.id, new Date(Date.now() + 60_000));
    await store().addSession(live);
    expect(await store().findSession(live.digest)).toEqual(live);
    expect(await store().findSession('b'.repeat(64))).toBeNull();

    expect(await store().setSessionOrganisation(live.digest, org.id)).toBe(true);
    expect(await store().findSession(live.digest)).toEqual({ ...live, orgId: org.id });
    expect(await store().setSessionOrganisation('b'.repeat(64), org.id)).toBe(false);

    expect(await store().removeSession(live.digest)).toBe(true);
    expect(await store().removeSession(live.digest)).toBe(false);
    expect(await store().findSession(live.digest)).toBeNull();
  });

  it('removes the sessions that expired, and only those', async () => {
    const ben = await store().createUser('ben-session');
    const now = new Date();
    const expired = session('c'.repeat(64), ben.id, ben.id, new Date(now.getTime() - 1));
    const live = session('d'.repeat(64), ben.id, ben.id, new Date(now.getTime() + 60_000));
    await store().addSession(expired);
    await store().addSession(live);
    expect(await store().removeExpiredSessions(now)).toBe(1);
    expect(await store().findSession(expired.digest)).toBeNull();
    expect(await store().findSession(live.digest)).toEqual(live);
  });

  it('links an identity to one user per provider, found by issuer and subject or by the user', async () => {
    const cleo = await store().createUser('cleo', { ownOrganisation: false });
    const dan = await store().createUser('dan', { ownOrganisation: false });
    const issuer = 'https://idp.example/realms/company';
    const identity = { issuer, subject: 'sub-cleo', userId: cleo.id, createdAt: new Date() };
    await store().addIdentity(identity);
    expect(await store().findIdentity(issuer, 'sub-cleo')).toEqual(identity);
    expect(await store().findUserIdentity(issuer, cleo.id)).toEqual(identity);
    expect(await store().findIdentity('https://other.example', 'sub-cleo')).toBeNull();
    expect(await store().findUserIdentity(issuer, new ObjectId().toHexString())).toBeNull();

    // The same subject again, or a second identity of the user at the same provider: refused.
    const again = { ...identity, userId: dan.id };
    await expect(store().addIdentity(again)).rejects.toMatchObject({ name: 'DuplicateError' });
    await expect(store().addIdentity({ ...identity, subject: 'sub-cleo-2' })).rejects.toMatchObject({
      name: 'DuplicateError',
    });
    // At another provider the same user may have one.
    await store().addIdentity({ ...identity, issuer: 'https://other.example' });
    expect(await store().findUserIdentity('https://other.example', cleo.id)).toMatchObject({ subject: 'sub-cleo' });
  });
});
