import { z } from 'zod';
import { agentIdSchema } from './audit-messages.ts';
import { LOCATIONS, type Location } from './ids.ts';

/**
 * Agents say they are there, so a gateway knows which locations are served before it
 * dispatches and can tell "every agent is busy" from "nobody is there". Part of NATS
 * contract v1 (added in v1.1): additive changes only.
 */
export const AGENT_ANNOUNCE_PREFIX = 'perfwatch.agents.v1.announce';

/**
 * Per location, so NATS permissions can let an agent announce only for the location it
 * serves (as they let it take only that location's jobs).
 */
export function agentAnnounceSubject(location: Location): string {
  return `${AGENT_ANNOUNCE_PREFIX}.${location}`;
}
/** A gateway that just started asks here; every agent announces itself at once. */
export const AGENT_DISCOVER_SUBJECT = 'perfwatch.agents.v1.discover';

/** Jobs an announcement names at most; an agent running more names the newest. */
export const MAX_ANNOUNCED_RUNNING = 64;

export const agentAnnouncementSchema = z.object({
  agentId: agentIdSchema,
  /**
   * Added in v1.2: random per agent process, seen only by gateways (agents cannot read
   * announcements). The registry binds an agent id to it, so only that process can update or
   * retire the id; an agent of v1.1 sends none and is believed as before.
   */
  instance: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,64}$/)
    .optional(),
  location: z.enum(LOCATIONS),
  /** The agent's perfwatch version, for upgrades that mix v1 minor versions. */
  version: z.string().max(50),
  /** Runs the agent does at once. */
  capacity: z.number().int().min(0).max(1000),
  /** Runs going on now; at `busy === capacity` the agent takes no work from the queue group. */
  busy: z.number().int().min(0).max(1000),
  /**
   * Added in v1.4: the jobs the agent is running, newest first (at most
   * MAX_ANNOUNCED_RUNNING). The agent announces at once when it takes a job, so a gateway learns
   * within a round trip that its offer arrived: NATS drops a job silently when it reaches a
   * region's server just after the agent there left the queue group (at capacity), and only
   * this tells a lost offer from a long run. An agent before v1.4 sends none.
   */
  running: z.array(z.string().min(1).max(200)).max(MAX_ANNOUNCED_RUNNING).optional(),
  /** `stopping` is the agent's last word before it leaves. */
  state: z.enum(['ready', 'stopping']),
  /** The next announcement comes within this; three missed ones and the agent counts as gone. */
  intervalMs: z.number().int().positive().max(600_000),
});
export type AgentAnnouncement = z.infer<typeof agentAnnouncementSchema>;

export function encodeAnnouncement(announcement: AgentAnnouncement): Uint8Array {
  return Buffer.from(JSON.stringify(agentAnnouncementSchema.parse(announcement)));
}

export function decodeAnnouncement(data: Uint8Array): AgentAnnouncement {
  return agentAnnouncementSchema.parse(JSON.parse(Buffer.from(data).toString('utf8')));
}
