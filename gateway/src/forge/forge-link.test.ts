import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../accounts/secret-box.ts';
import { gitlabTokenDigest, linkRecord, linkView, openForgeToken, openWebhookSecret } from './forge-link.ts';

const secrets = createSecretBox({ key: randomBytes(32).toString('base64') });
const project = { id: '0123456789abcdef01234567', url: 'https://shop.example/', userId: 'fedcba9876543210fedcba98' };
const now = new Date(Date.UTC(2026, 10, 26));
const given = {
  repository: 'Acme/Shop',
  apiUrl: 'https://api.github.com',
  token: 'ghp_the-forge-token',
  webhookSecret: 'the-webhook-secret',
  previewUrl: null,
  defaultBranch: 'main',
};

describe("a project's repository link", () => {
  it('seals the GitHub token and webhook secret for this project alone, and shows neither', () => {
    const link = linkRecord(secrets, project, { ...given, forge: 'github' }, now);
    expect(JSON.stringify(link)).not.toMatch(/the-forge-token|the-webhook-secret/);
    expect([link.repositoryKey, link.webhookSecretDigest]).toEqual(['acme/shop', null]);
    expect(openForgeToken(secrets, project, link)).toBe('ghp_the-forge-token');
    expect(openWebhookSecret(secrets, project, link)).toBe('the-webhook-secret');
    // Bound to the project's id and URL, and to which secret it is.
    expect(() => openForgeToken(secrets, { ...project, url: 'https://other.example/' }, link)).toThrow();
    expect(() => openForgeToken(secrets, project, { ...link, tokenSealed: link.webhookSecretSealed! })).toThrow();
    expect(linkView(project.url, link)).toEqual({
      url: project.url,
      forge: 'github',
      repository: 'Acme/Shop',
      apiUrl: 'https://api.github.com',
      previewUrl: null,
      defaultBranch: 'main',
      tokenSet: true,
      webhookSecretSet: true,
    });
  });

  it("keeps only the digest of GitLab's webhook token, which GitLab sends in clear", () => {
    const link = linkRecord(secrets, project, { ...given, forge: 'gitlab', repository: 'Group/App' }, now);
    expect([link.repositoryKey, link.webhookSecretSealed]).toEqual(['group/app', null]);
    expect(link.webhookSecretDigest).toBe(gitlabTokenDigest('the-webhook-secret'));
    expect(() => openWebhookSecret(secrets, project, link)).toThrow();
  });
});
