import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { gitlabTokenDigest } from './forge-link.ts';
import { verifyGiteaSignature, verifyGithubSignature, verifyGitlabToken } from './forge-signatures.ts';

// GitHub's own example ("Validating webhook deliveries", docs.github.com).
const GITHUB_SECRET = "It's a Secret to Everybody";
const GITHUB_BODY = Buffer.from('Hello, World!');
const GITHUB_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

describe('GitHub X-Hub-Signature-256', () => {
  it("verifies GitHub's documented example", () => {
    expect(verifyGithubSignature(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE)).toBe(true);
  });

  it('refuses another secret, another body, a missing or malformed header, upper-case prefix', () => {
    expect(verifyGithubSignature('another secret', GITHUB_BODY, GITHUB_SIGNATURE)).toBe(false);
    expect(verifyGithubSignature(GITHUB_SECRET, Buffer.from('Hello, World?'), GITHUB_SIGNATURE)).toBe(false);
    expect(verifyGithubSignature(GITHUB_SECRET, GITHUB_BODY, undefined)).toBe(false);
    expect(verifyGithubSignature(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE.slice(7))).toBe(false);
    expect(verifyGithubSignature(GITHUB_SECRET, GITHUB_BODY, 'sha256=')).toBe(false);
    expect(verifyGithubSignature(GITHUB_SECRET, GITHUB_BODY, `${GITHUB_SIGNATURE}00`)).toBe(false);
    expect(verifyGithubSignature(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE.replace('sha256', 'sha1'))).toBe(false);
  });
});

describe('Gitea X-Gitea-Signature', () => {
  it('is the same HMAC without a prefix (Gitea signs the raw body with HMAC-SHA256, hex)', () => {
    expect(verifyGiteaSignature(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE.slice(7))).toBe(true);
    const body = Buffer.from('{"action":"opened","number":1}');
    const hex = createHmac('sha256', 'gitea-webhook-secret').update(body).digest('hex');
    expect(verifyGiteaSignature('gitea-webhook-secret', body, hex)).toBe(true);
    expect(verifyGiteaSignature('gitea-webhook-secret', body, hex.toUpperCase())).toBe(true);
  });

  it('refuses the GitHub form, another secret, a missing header', () => {
    expect(verifyGiteaSignature(GITHUB_SECRET, GITHUB_BODY, GITHUB_SIGNATURE)).toBe(false);
    expect(verifyGiteaSignature('x', GITHUB_BODY, GITHUB_SIGNATURE.slice(7))).toBe(false);
    expect(verifyGiteaSignature(GITHUB_SECRET, GITHUB_BODY, undefined)).toBe(false);
  });
});

describe('GitLab X-Gitlab-Token', () => {
  // GitLab's docs: the secret token is sent as it is in X-Gitlab-Token; it is not a signature.
  const digest = gitlabTokenDigest('My-Secret-Token-123');

  it('matches the token whose digest the link keeps', () => {
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyGitlabToken(digest, 'My-Secret-Token-123')).toBe(true);
  });

  it('refuses another token, a missing header, a digest that is not one', () => {
    expect(verifyGitlabToken(digest, 'my-secret-token-123')).toBe(false);
    expect(verifyGitlabToken(digest, '')).toBe(false);
    expect(verifyGitlabToken(digest, undefined)).toBe(false);
    expect(verifyGitlabToken('', 'My-Secret-Token-123')).toBe(false);
  });
});
