import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PageAuth } from '@perfwatch/common';
import { openProjectAuth, readProjectAuth, sealProjectAuth } from './project-auth.ts';
import { createSecretBox } from '../accounts/secret-box.ts';

const box = createSecretBox({ key: randomBytes(32).toString('base64') });
const auth: PageAuth = { cookies: [{ name: 'session', value: 's3cr3t' }] };
const project = { id: '65f0c0ffee0123456789abcd', url: 'https://shop.example/account/' };

describe('project credentials', () => {
  it('open for the project they were sealed for, and not once its URL names another page', () => {
    const sealed = sealProjectAuth(box, project, auth);
    expect(openProjectAuth(box, { ...project, auth: sealed })).toEqual(auth);
    expect(readProjectAuth(box, { ...project, auth: sealed })?.urlBound).toBe(true);
    // The same id with its URL changed in the database: the credentials must not follow it.
    expect(() => openProjectAuth(box, { ...project, url: 'https://attacker.example/', auth: sealed })).toThrow(
      /integrity/,
    );
    expect(() => openProjectAuth(box, { ...project, id: '65f0c0ffee0123456789abce', auth: sealed })).toThrow(
      /integrity/,
    );
  });

  it('still read what an earlier version sealed for the id alone, and say it is to be resealed', () => {
    const legacy = box.seal(JSON.stringify(auth), project.id);
    expect(readProjectAuth(box, { ...project, auth: legacy })).toEqual({ auth, urlBound: false });
    expect(() => openProjectAuth(box, { ...project, id: '65f0c0ffee0123456789abce', auth: legacy })).toThrow(
      /integrity/,
    );
  });

  it('say so when what opens is not credentials', () => {
    const sealed = box.seal('not json', JSON.stringify([project.id, project.url]));
    expect(() => openProjectAuth(box, { ...project, auth: sealed })).toThrow(/not valid credentials/);
    expect(openProjectAuth(box, { ...project, auth: null })).toBeUndefined();
  });
});
