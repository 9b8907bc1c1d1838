import type { SecretBox } from '../accounts/secret-box.ts';
import type { WebhookRecord } from '../store/store.ts';

/** How a sealed value begins (secret-box.ts); a signing secret as handed out begins `pwhs_`. */
const SEALED = 'pwsec1.';

/**
 * The associated data a webhook's secret is sealed with: its owner, so a sealed secret copied
 * into another user's webhook does not open (the webhook's own id is not known before it is
 * stored), and a kind of its own, so it is never taken for a project's credentials.
 */
const ownerOf = (userId: string): string => `webhook:${userId}`;

/**
 * The form a new secret is stored in: sealed under PERFWATCH_SECRETS_KEY when the gateway has
 * one; as it is without one (`perfwatch start` has none unless given), as before sealing existed.
 */
export function storedWebhookSecret(secrets: SecretBox, userId: string, secret: string): string {
  return secrets.ready ? secrets.seal(secret, ownerOf(userId)) : secret;
}

/**
 * The secret to sign with, from either stored form: sealed, or as stored before sealing (or
 * without a key). Throws SecretKeyError when sealed under a key this gateway does not have.
 */
export function openWebhookSecret(secrets: SecretBox, hook: Pick<WebhookRecord, 'userId' | 'secret'>): string {
  return hook.secret.startsWith(SEALED) ? secrets.open(hook.secret, ownerOf(hook.userId)) : hook.secret;
}

/** Whether a stored secret is sealed under the current key (false: `rotate-secrets-key` seals it). */
export function webhookSecretIsCurrent(secrets: SecretBox, stored: string): boolean {
  return stored.startsWith(SEALED) && secrets.isCurrent(stored);
}
