import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * Refuses to let the agent (or a gateway's webhooks) reach loopback, private, link-local (cloud
 * metadata at 169.254.169.254 among them), unique-local, carrier-grade NAT, multicast and
 * reserved addresses: an agent measures URLs its users choose, and must not become a way into the
 * network it runs in. Checked after DNS resolution, and the address checked is the one connected to,
 * so a name that resolves differently the second time (DNS rebinding) gains nothing.
 */
export class TargetRefused extends Error {
  readonly host: string;
  /**
   * `forbidden`: the address is one the agent may not reach. `unresolvable`: there is no
   * address at all, which Chrome would have failed on anyway (and which Chrome's own background
   * requests to Google hit on a closed network): not a refusal to blame a page's failure on.
   */
  readonly kind: 'forbidden' | 'unresolvable';
  /**
   * The addresses refused, for the operator's log only: the message, which reaches users,
   * names an address only when the user gave it, so a name cannot be used to map the
   * agent's internal network through its refusals.
   */
  readonly addresses: readonly string[];
  constructor(
    host: string,
    reason: string,
    kind: 'forbidden' | 'unresolvable' = 'forbidden',
    addresses: readonly string[] = [],
  ) {
    super(`refused to reach ${host}: ${reason}`);
    this.name = 'TargetRefused';
    this.host = host;
    this.kind = kind;
    this.addresses = addresses;
  }
}

export interface TargetGuard {
  /** Resolves `host` and returns the address to connect to; throws TargetRefused. */
  resolve(host: string): Promise<{ address: string; family: 4 | 6 }>;
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses an allow-list of CIDRs or single addresses (`127.0.0.0/8,10.1.2.3`). */
export function parseAllowList(text: string): Range[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      if (entry.includes('/')) return ipaddr.parseCIDR(entry);
      const address = ipaddr.parse(entry);
      return [address, address.kind() === 'ipv4' ? 32 : 128] as Range;
    });
}

function normalize(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  // ::ffff:10.0.0.1 is 10.0.0.1.
  return ipaddr.process(address);
}

/** Whether an address may be reached: public unicast, or inside the allow-list. */
export function isAllowedAddress(address: string, allow: readonly Range[]): boolean {
  const ip = normalize(address);
  if (allow.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net as never, bits))) return true;
  // ::a.b.c.d (IPv4-compatible, deprecated by RFC 4291) is "unicast" to ipaddr.js, yet some
  // stacks route it to a.b.c.d: refused whatever IPv4 address it carries.
  if (ip.kind() === 'ipv6' && ip.match(IPV4_COMPATIBLE as never, 96)) return false;
  return ip.range() === 'unicast';
}

const IPV4_COMPATIBLE = ipaddr.parse('::');

export function createTargetGuard({
  allow = [],
  resolveHost = (host: string) => lookup(host, { all: true, verbatim: true }),
}: {
  allow?: readonly Range[];
  resolveHost?: (host: string) => Promise<Array<{ address: string; family: number }>>;
} = {}): TargetGuard {
  return {
    async resolve(host) {
      const bare = host.replace(/^\[(.*)\]$/, '$1');
      let addresses: Array<{ address: string; family: number }>;
      if (ipaddr.isValid(bare)) addresses = [{ address: bare, family: bare.includes(':') ? 6 : 4 }];
      else {
        try {
          addresses = await resolveHost(bare);
        } catch (error) {
          // The code only (ENOTFOUND): a resolver's message can name internal servers.
          throw new TargetRefused(
            host,
            `it does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`,
            'unresolvable',
          );
        }
      }
      if (addresses.length === 0) throw new TargetRefused(host, 'it has no address', 'unresolvable');
      // Every address must pass: otherwise a name with one public and one private address
      // would let Chrome pick the private one.
      const blocked = addresses.filter((a) => !isAllowedAddress(a.address, allow));
      if (blocked.length > 0)
        throw new TargetRefused(
          host,
          ipaddr.isValid(bare)
            ? `${bare} is not a public address (allow it with PERFWATCH_ALLOW_TARGETS)`
            : 'it resolves to an address that is not a public address (allow it with PERFWATCH_ALLOW_TARGETS)',
          'forbidden',
          blocked.map((a) => a.address),
        );
      const chosen = addresses[0]!;
      return { address: chosen.address, family: chosen.family === 6 ? 6 : 4 };
    },
  };
}
