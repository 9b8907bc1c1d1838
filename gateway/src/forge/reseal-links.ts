import type { SecretBox } from '../accounts/secret-box.ts';
import type { ProjectRecord } from '../projects/store/projects-store.ts';
import { openForgeToken, openWebhookSecret, sealLinkSecrets } from './forge-link.ts';
import type { ForgeStore } from './store/forge-store.ts';

export interface UnreadableLink {
  project: ProjectRecord;
  reason: string;
}

/**
 * `perfwatch admin rotate-secrets-key`'s part for repository links: each link of `projects`
 * whose token or webhook secret is not under the current key is opened (with the current or the
 * previous key) and sealed again, written only over what was read (a PUT meanwhile stands).
 * Links it cannot open are named, and gone on past, as projects' credentials are.
 */
export async function resealForgeLinks(
  store: Pick<ForgeStore, 'findForgeLink' | 'replaceForgeLinkSecrets'>,
  secrets: SecretBox,
  projects: readonly ProjectRecord[],
): Promise<{ resealed: number; unreadable: UnreadableLink[] }> {
  let resealed = 0;
  const unreadable: UnreadableLink[] = [];
  for (const project of projects) {
    const link = await store.findForgeLink(project.id);
    if (!link) continue;
    const current =
      secrets.isCurrent(link.tokenSealed) &&
      (link.webhookSecretSealed === null || secrets.isCurrent(link.webhookSecretSealed));
    if (current) continue;
    let sealed;
    try {
      const token = openForgeToken(secrets, project, link);
      const webhookSecret = link.webhookSecretSealed === null ? null : openWebhookSecret(secrets, project, link);
      sealed = sealLinkSecrets(secrets, project, token, webhookSecret);
    } catch (error) {
      unreadable.push({ project, reason: (error as Error).message });
      continue;
    }
    if (await store.replaceForgeLinkSecrets(project.id, link.tokenSealed, sealed)) resealed += 1;
  }
  return { resealed, unreadable };
}
