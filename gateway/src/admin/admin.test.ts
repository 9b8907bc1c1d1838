import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PageAuth } from '@perfwatch/common';
import { readProjectAuth } from '../projects/project-auth.ts';
import { createSecretBox } from '../accounts/secret-box.ts';
import { SqliteStore } from '../store/sqlite-store.ts';
import { createAdmin } from './admin.ts';

// rotate-secrets-key against the embedded store, in memory: a real store, with a write of its
// own slipped in between the rotation's read of a project and its write.

const key = () => randomBytes(32).toString('base64');
const URL_ = 'https://rotating.example/';
const OLD: PageAuth = { cookies: [{ name: 'session', value: 'old-session' }] };
const NEW: PageAuth = { cookies: [{ name: 'session', value: 'new-session' }] };

let store: SqliteStore;

beforeEach(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
});

afterEach(async () => {
  await store.close();
});

/** The store, with `meanwhile` run once just before the first write of a project's credentials through it. */
function writesMeanwhile<S extends object>(inner: S, meanwhile: () => Promise<void>): S {
  let done = false;
  return new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (name !== 'setProjectAuth' && name !== 'replaceProjectAuth') return value.bind(target);
      return async (...args: unknown[]) => {
        if (!done) {
          done = true;
          await meanwhile();
        }
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
}

describe('rotate-secrets-key', () => {
  it('does not undo credentials set while it worked: it writes only over the value it read', async () => {
    const [oldKey, newKey] = [key(), key()];
    await createAdmin(store).createUser('owner');
    await createAdmin(store).addProject('owner', URL_);
    await createAdmin(store, { secrets: createSecretBox({ key: oldKey }) }).setAuth('owner', URL_, OLD);

    const rotating = createSecretBox({ key: newKey, previous: oldKey });
    // A set-auth by a gateway or admin that already has the new key, between the rotation's read and write.
    const setMeanwhile = () =>
      createAdmin(store, { secrets: createSecretBox({ key: newKey }) }).setAuth('owner', URL_, NEW);
    const result = await createAdmin(
      writesMeanwhile(store, async () => void (await setMeanwhile())),
      {
        secrets: rotating,
      },
    ).rotateSecretsKey();

    const stored = (await store.listProjects())[0]!;
    expect(readProjectAuth(createSecretBox({ key: newKey }), stored)).toEqual({ auth: NEW, urlBound: true });
    // What it found on looking again was already under the new key.
    expect(result).toMatchObject({ resealed: 0, current: 1, unreadable: [] });
  });

  it('reseals what an earlier version sealed for the id alone, under the same key, bound to the URL', async () => {
    const secretsKey = key();
    const box = createSecretBox({ key: secretsKey });
    await createAdmin(store).createUser('owner');
    const project = await createAdmin(store).addProject('owner', URL_);
    await store.setProjectAuth(project.id, box.seal(JSON.stringify(OLD), project.id));

    const result = await createAdmin(store, { secrets: box }).rotateSecretsKey();
    expect(result).toMatchObject({ resealed: 1, current: 0, unreadable: [] });
    expect(readProjectAuth(box, (await store.listProjects())[0]!)).toEqual({ auth: OLD, urlBound: true });
    expect(await createAdmin(store, { secrets: box }).rotateSecretsKey()).toMatchObject({ resealed: 0, current: 1 });
  });

  it('goes on past a webhook secret it cannot open, names it, and seals the others', async () => {
    const [lostKey, newKey] = [key(), key()];
    const lost = createSecretBox({ key: lostKey });
    const owner = (await createAdmin(store).createUser('hooks')).user;
    // Sealed under a key nobody has any more, and one as an earlier version stored it (plain).
    const unreadable = await store.addWebhook({
      userId: owner.id,
      targetUrl: 'https://hooks.example/lost',
      projectUrl: null,
      format: 'json',
      secret: lost.seal(`pwhs_${'a'.repeat(43)}`, owner.id),
    });
    await store.addWebhook({
      userId: owner.id,
      targetUrl: 'https://hooks.example/plain',
      projectUrl: null,
      format: 'json',
      secret: `pwhs_${'b'.repeat(43)}`,
    });
    const result = await createAdmin(store, { secrets: createSecretBox({ key: newKey }) }).rotateSecretsKey();
    expect(result.webhookSecrets).toBe(1);
    expect(result.unreadableWebhooks).toEqual([{ user: 'hooks', id: unreadable.id, reason: expect.any(String) }]);
    const stored = await store.listWebhooks(owner.id);
    expect(stored.find((h) => h.targetUrl.endsWith('/plain'))!.secret).toMatch(/^pwsec1\./);
  });
});
