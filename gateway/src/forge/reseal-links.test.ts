import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../accounts/secret-box.ts';
import type { ProjectRecord } from '../projects/store/projects-store.ts';
import { linkRecord, openForgeToken, openWebhookSecret } from './forge-link.ts';
import { resealForgeLinks } from './reseal-links.ts';
import type { ForgeLinkRecord, ForgeStore, LinkSecrets } from './store/forge-store.ts';

const aKey = () => randomBytes(32).toString('base64');
const [oldKey, newKey, strayKey] = [aKey(), aKey(), aKey()];
const project = (n: number): ProjectRecord => ({
  id: `0123456789abcdef0123456${n}`,
  userId: 'fedcba9876543210fedcba98',
  url: `https://p${n}.example/`,
  domain: `p${n}.example`,
  locations: ['london'],
  defaultLocation: 'london',
  runs: 1,
  schedule: null,
  budgets: { budgets: {}, maxRegression: {} },
  auth: null,
  devices: null,
  crux: null,
  siteId: null,
  flow: null,
  createdAt: new Date(),
});

/** The two methods the rotation uses, over a map. */
function linksStore(
  links: Map<string, ForgeLinkRecord>,
): Pick<ForgeStore, 'findForgeLink' | 'replaceForgeLinkSecrets'> {
  return {
    findForgeLink: async (id) => links.get(id) ?? null,
    replaceForgeLinkSecrets: async (id, expected, sealed: LinkSecrets) => {
      const link = links.get(id);
      if (link?.tokenSealed !== expected) return false;
      links.set(id, { ...link, ...sealed });
      return true;
    },
  };
}

describe("rotate-secrets-key's part for repository links", () => {
  it('reseals what the previous key sealed, leaves what is current, names what neither key opens', async () => {
    const given = { apiUrl: 'https://api.github.com', previewUrl: null, defaultBranch: 'main' };
    const [github, gitlab, current, stray] = [project(1), project(2), project(3), project(4)];
    const old = createSecretBox({ key: oldKey });
    const rotated = createSecretBox({ key: newKey, previous: oldKey });
    const link = (box: typeof old, p: ProjectRecord, forge: 'github' | 'gitlab') =>
      linkRecord(
        box,
        p,
        { ...given, forge, repository: 'acme/shop', token: `token-${p.id}`, webhookSecret: 'secret-of-16-chars' },
        new Date(),
      );
    const links = new Map([
      [github.id, link(old, github, 'github')],
      [gitlab.id, link(old, gitlab, 'gitlab')],
      [current.id, link(rotated, current, 'github')],
      [stray.id, link(createSecretBox({ key: strayKey }), stray, 'github')],
    ]);
    const before = new Map(links);
    const outcome = await resealForgeLinks(linksStore(links), rotated, [github, gitlab, current, stray, project(5)]);
    expect(outcome.resealed).toBe(2);
    expect(outcome.unreadable.map((u) => u.project.url)).toEqual([stray.url]);
    const renewed = createSecretBox({ key: newKey });
    expect(openForgeToken(renewed, github, links.get(github.id)!)).toBe(`token-${github.id}`);
    expect(openWebhookSecret(renewed, github, links.get(github.id)!)).toBe('secret-of-16-chars');
    expect(openForgeToken(renewed, gitlab, links.get(gitlab.id)!)).toBe(`token-${gitlab.id}`);
    expect(links.get(gitlab.id)!.webhookSecretDigest).toBe(before.get(gitlab.id)!.webhookSecretDigest);
    expect(links.get(current.id)).toBe(before.get(current.id));
    expect(links.get(stray.id)).toBe(before.get(stray.id));
    expect(await resealForgeLinks(linksStore(links), rotated, [github, gitlab, current])).toEqual({
      resealed: 0,
      unreadable: [],
    });
  });
});
