import { expect, it } from 'vitest';
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

  it('keeps notes by key, the last value written', async () => {
    expect(await store().readNote('contract-note')).toBeNull();
    await store().writeNote('contract-note', 'first');
    await store().writeNote('contract-note', 'second');
    expect(await store().readNote('contract-note')).toBe('second');
  });
});
