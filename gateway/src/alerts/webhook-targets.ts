import { BlockList, isIPv4 } from 'node:net';
import { createTargetGuard, parseAllowList, TargetRefused, type TargetGuard } from '@perfwatch/common';

/**
 * Where webhooks may post: the address rules of measured pages (public addresses, and those
 * PERFWATCH_ALLOW_TARGETS lists), and plain `http://` only to an address the list names. A
 * delivery carries its signature and body in the clear over http, so it may go unencrypted only
 * into a network the operator named (a receiver on the same host or LAN); anywhere else, https.
 */
export interface WebhookTargets extends TargetGuard {
  /** Whether plain http may carry a delivery to this address: one PERFWATCH_ALLOW_TARGETS lists. */
  allowsPlainHttp(address: string): boolean;
}

/** The rules from PERFWATCH_ALLOW_TARGETS (CIDRs or addresses, comma-separated); empty: public https only. */
export function createWebhookTargets(allowTargets = ''): WebhookTargets {
  const ranges = parseAllowList(allowTargets);
  const guard = createTargetGuard({ allow: ranges });
  // node:net's own matcher (it also matches ::ffff:10.0.0.1 against 10.0.0.0/8).
  const listed = new BlockList();
  for (const [network, bits] of ranges) listed.addSubnet(network.toString(), bits, network.kind());
  return {
    resolve: (host) => guard.resolve(host),
    allowsPlainHttp: (address) => listed.check(address, isIPv4(address) ? 'ipv4' : 'ipv6'),
  };
}

/**
 * Resolves a target's host under the rules and returns the address to connect to; throws
 * TargetRefused. Checked when a webhook is added and again at every delivery, on the address
 * actually connected to (DNS, and the operator's list, may say otherwise later).
 */
export async function approveWebhookTarget(
  targets: WebhookTargets,
  url: URL,
): Promise<{ address: string; family: 4 | 6 }> {
  const approved = await targets.resolve(url.hostname);
  if (url.protocol === 'http:' && !targets.allowsPlainHttp(approved.address))
    throw new TargetRefused(
      url.hostname,
      `plain http:// goes only to addresses PERFWATCH_ALLOW_TARGETS lists, and ${approved.address} is not one; use https://`,
    );
  return approved;
}
