import { createHash } from 'node:crypto';
import type { RepositoryLinkInput, RepositoryLinkView } from '@perfwatch/common';
import type { SecretBox } from '../accounts/secret-box.ts';
import type { ProjectRecord } from '../projects/store/projects-store.ts';
import { repositoryKeyOf, type ForgeLinkRecord, type LinkSecrets } from './store/forge-store.ts';

type LinkedProject = Pick<ProjectRecord, 'id' | 'url' | 'userId'>;
type SecretKind = 'forge-token' | 'forge-webhook-secret';

/**
 * The associated data a link's secrets are sealed with: the project's id and URL (as its page
 * credentials are, project-auth.ts) and which secret it is, so neither opens for another
 * project nor in the other's place.
 */
const ownerOf = (project: Pick<ProjectRecord, 'id' | 'url'>, kind: SecretKind): string =>
  JSON.stringify([project.id, project.url, kind]);

/** SHA-256 (hex) of a GitLab webhook token: what is kept of a secret the forge sends in clear. */
export const gitlabTokenDigest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** A link's record: its secrets sealed for the project, GitLab's webhook token kept as a digest. */
export function linkRecord(
  secrets: SecretBox,
  project: LinkedProject,
  link: RepositoryLinkInput,
  now: Date,
): ForgeLinkRecord {
  const hmacKeyed = link.forge !== 'gitlab';
  return {
    projectId: project.id,
    userId: project.userId,
    forge: link.forge,
    repository: link.repository,
    repositoryKey: repositoryKeyOf(link.repository),
    apiUrl: link.apiUrl,
    ...sealLinkSecrets(secrets, project, link.token, hmacKeyed ? link.webhookSecret : null),
    webhookSecretDigest: hmacKeyed ? null : gitlabTokenDigest(link.webhookSecret),
    previewUrl: link.previewUrl,
    defaultBranch: link.defaultBranch,
    updatedAt: now,
  };
}

/** A link's secrets sealed again, for a key rotation: the token, and the webhook secret when it is kept sealed. */
export function sealLinkSecrets(
  secrets: SecretBox,
  project: Pick<ProjectRecord, 'id' | 'url'>,
  token: string,
  webhookSecret: string | null,
): LinkSecrets {
  return {
    tokenSealed: secrets.seal(token, ownerOf(project, 'forge-token')),
    webhookSecretSealed:
      webhookSecret === null ? null : secrets.seal(webhookSecret, ownerOf(project, 'forge-webhook-secret')),
  };
}

/** The HMAC key of a GitHub or Gitea link; throws SecretKeyError when it cannot be opened here. */
export function openWebhookSecret(
  secrets: SecretBox,
  project: Pick<ProjectRecord, 'id' | 'url'>,
  link: ForgeLinkRecord,
) {
  if (!link.webhookSecretSealed) throw new Error(`a ${link.forge} link without its webhook secret`);
  return secrets.open(link.webhookSecretSealed, ownerOf(project, 'forge-webhook-secret'));
}

/** The forge API token of a link, for the reporter; throws SecretKeyError when it cannot be opened here. */
export function openForgeToken(secrets: SecretBox, project: Pick<ProjectRecord, 'id' | 'url'>, link: ForgeLinkRecord) {
  return secrets.open(link.tokenSealed, ownerOf(project, 'forge-token'));
}

/** What the API shows of a link: never a secret, only that each is set. */
export const linkView = (url: string, link: ForgeLinkRecord): RepositoryLinkView => ({
  url,
  forge: link.forge,
  repository: link.repository,
  apiUrl: link.apiUrl,
  previewUrl: link.previewUrl,
  defaultBranch: link.defaultBranch,
  tokenSet: true,
  webhookSecretSet: true,
});
