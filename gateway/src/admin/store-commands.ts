import { LIGHTHOUSE_KPI_VERSION } from '@perfwatch/common';
import { adminCommand } from './admin-command.ts';
import { AdminError } from './admin.ts';
import { recomputeKpis as recomputeStoredKpis } from './recompute-kpis.ts';

export const rotateSecretsKey = adminCommand({
  synopsis: '',
  summary: [
    "reseal every project's credentials and webhook secrets under PERFWATCH_SECRETS_KEY",
    '(the old key in PERFWATCH_SECRETS_KEY_PREVIOUS); goes on past credentials',
    'it cannot open, names them, and exits 1',
  ],
  args: 0,
  run: async ({ admin, out }) => {
    const { resealed, current, unreadable, webhookSecrets, unreadableWebhooks, forgeLinks, unreadableForgeLinks } =
      await admin.rotateSecretsKey();
    out.write(
      `resealed the credentials of ${resealed} project(s); ${current} already under the current key; sealed ${webhookSecrets} webhook secret(s); resealed ${forgeLinks} repository link(s)\n`,
    );
    if (unreadable.length + unreadableWebhooks.length + unreadableForgeLinks.length === 0) return;
    for (const { user, url, reason } of unreadable)
      out.write(`could not reseal the credentials of ${url} (user ${user}): ${reason}\n`);
    for (const { user, id, reason } of unreadableWebhooks)
      out.write(`could not seal the secret of webhook ${id} (user ${user}): ${reason}\n`);
    for (const { user, url, reason } of unreadableForgeLinks)
      out.write(`could not reseal the repository link of ${url} (user ${user}): ${reason}\n`);
    const links = unreadableForgeLinks.length > 0 ? ` and ${unreadableForgeLinks.length} repository link(s)` : '';
    throw new AdminError(
      `${unreadable.length} project(s) and ${unreadableWebhooks.length} webhook(s)${links} kept secrets it could not open (listed above): set them again (set-auth; a webhook removed and added; a link PUT again), or give the key they were sealed under as PERFWATCH_SECRETS_KEY_PREVIOUS`,
    );
  },
});

export const recomputeKpis = adminCommand({
  synopsis: '',
  summary: [
    'rebuild the KPI records of snapshots stored by an older version',
    'from their kept Lighthouse results (LIGHTHOUSE, PAGE_SOURCE, SAVINGS)',
  ],
  args: 0,
  run: async ({ store, out }) => {
    const count = await recomputeStoredKpis(store);
    out.write(`KPI records of ${count} snapshot(s) rebuilt to version ${LIGHTHOUSE_KPI_VERSION}\n`);
  },
});
