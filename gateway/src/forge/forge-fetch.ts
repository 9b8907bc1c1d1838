import { Agent, fetch as undiciFetch } from 'undici';
import { TargetRefused, type Fetch } from '@perfwatch/common';
import { pinnedLookup } from '../alerts/webhook-post.ts';
import { approveWebhookTarget, type WebhookTargets } from '../alerts/webhook-targets.ts';

/**
 * The fetch the forge reporter sends with. A link's API URL is a user's input, so every request
 * goes only where webhooks may go (public addresses over https; plain http only to addresses
 * PERFWATCH_ALLOW_TARGETS lists), and to the very address that was judged: the connection's
 * lookup answers with it (undici's Agent, since Node's own fetch takes no lookup), so a name
 * that answers differently a moment later (DNS rebinding) cannot move the request elsewhere.
 * TLS still verifies the certificate against the host's name. Redirects are refused by the
 * forge client itself.
 */
export function forgeFetch(targets: WebhookTargets): Fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    let approved: Awaited<ReturnType<typeof approveWebhookTarget>>;
    try {
      approved = await approveWebhookTarget(targets, url);
    } catch (error) {
      if (error instanceof TargetRefused) throw new Error(`refused by the address rules: ${error.message}`);
      throw error;
    }
    const dispatcher = new Agent({ connect: { lookup: pinnedLookup(approved) } });
    try {
      const response = await undiciFetch(url, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher });
      // The body is still to be read (by the forge client, within its bound): an agent closing
      // gracefully lets the request it carries finish first.
      return response as unknown as Response;
    } finally {
      void dispatcher.close();
    }
  };
}
