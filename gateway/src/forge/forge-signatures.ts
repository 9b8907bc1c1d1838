import { createHmac, timingSafeEqual } from 'node:crypto';
import { gitlabTokenDigest } from './forge-link.ts';

/**
 * Each forge's proof that it sent a delivery. GitHub signs the raw body with HMAC-SHA256 under
 * the webhook secret (`X-Hub-Signature-256: sha256=<hex>`), Gitea the same without the prefix
 * (`X-Gitea-Signature: <hex>`); GitLab sends the secret itself (`X-Gitlab-Token`), compared
 * here by its SHA-256 digest, the only form of it kept. Every comparison takes constant time.
 */

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

const hmacOf = (secret: string, body: Buffer): Buffer => createHmac('sha256', secret).update(body).digest();

/** Whether `hex` is the HMAC-SHA256 of `body` under `secret`. */
function hmacMatches(secret: string, body: Buffer, hex: string): boolean {
  if (!HEX_SHA256.test(hex)) return false;
  return timingSafeEqual(hmacOf(secret, body), Buffer.from(hex, 'hex'));
}

/** GitHub's `X-Hub-Signature-256` for `body` under `secret`. */
export function verifyGithubSignature(secret: string, body: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false;
  return hmacMatches(secret, body, header.slice('sha256='.length));
}

/** Gitea's `X-Gitea-Signature` for `body` under `secret`. */
export function verifyGiteaSignature(secret: string, body: Buffer, header: string | undefined): boolean {
  return header !== undefined && hmacMatches(secret, body, header.trim());
}

/** GitLab's `X-Gitlab-Token` against the digest of the link's token. */
export function verifyGitlabToken(digest: string, header: string | undefined): boolean {
  if (header === undefined || !HEX_SHA256.test(digest)) return false;
  return timingSafeEqual(Buffer.from(gitlabTokenDigest(header), 'hex'), Buffer.from(digest, 'hex'));
}
