import { TargetRefused, type Fetch } from '@perfwatch/common';
import { approveWebhookTarget, type WebhookTargets } from '../alerts/webhook-targets.ts';

/**
 * The fetch the forge reporter sends with: a link's API URL is a user's input, so every request
 * goes only where webhooks may go (public addresses over https; plain http only to addresses
 * PERFWATCH_ALLOW_TARGETS lists), judged on the host's address before each request. Redirects
 * are refused by the forge client itself. The address is resolved again by fetch to connect, so
 * a name that answers differently between the two lookups is not caught here (webhooks pin the
 * address; forge APIs are named by the operator's own link, and answer with JSON only).
 */
export function forgeFetch(targets: WebhookTargets, fetchFn: Fetch = fetch): Fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    try {
      await approveWebhookTarget(targets, url);
    } catch (error) {
      if (error instanceof TargetRefused) throw new Error(`refused by the address rules: ${error.message}`);
      throw error;
    }
    return fetchFn(input, init);
  };
}
