import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import {
  AGENT_ANNOUNCE_PREFIX,
  AGENT_DISCOVER_SUBJECT,
  decodeAnnouncement,
  type AgentAnnouncement,
  type Location,
} from '@perfwatch/common';

/** Announcements an agent may miss before it counts as gone. */
const MISSED_ANNOUNCEMENTS = 3;
/**
 * Live agents a location may have: far above any real fleet, low enough that a region's
 * credentials announcing invented ids cannot grow the gateway's memory without bound.
 */
export const MAX_AGENTS_PER_LOCATION = 500;
/** Ignored announcements are logged at most this often, with their count. */
const IGNORED_LOG_EVERY_MS = 10_000;

export interface AgentRegistry {
  /**
   * The live agents of a location, or `undefined` while the registry cannot yet tell (it has
   * just started and agents are still answering its discovery call).
   */
  agents(location: Location): AgentAnnouncement[] | undefined;
  /** Every live agent, for metrics and readiness. */
  all(): AgentAnnouncement[];
  /**
   * Whether the location's agents all went silent (announced, then missed three announcements)
   * and none has announced since: NATS may still route jobs to them, but they are frozen or cut
   * off. A location never announced (agents of v1.0, which do not announce) is not silent.
   */
  silent(location: Location): boolean;
  /** Resolves when an agent of the location says it has room, or after `ms`. */
  roomIn(location: Location, ms: number): Promise<void>;
  /**
   * Whether an agent of the location can be asked to confirm it took a job: every live agent
   * names its running jobs (v1.4). A mixed fleet cannot tell a lost offer from a silent taker.
   */
  confirmsTakes(location: Location): boolean;
  /**
   * Resolves `true` once an announcement of the location names the job as running, `false`
   * after `ms` without one, or `true` when `signal` aborts (the offer ended some other way).
   */
  taken(location: Location, jobId: string, ms: number, signal: AbortSignal): Promise<boolean>;
  /** Told of every announcement of free places (`places` of them at one agent of `location`). */
  onRoom(listener: (location: Location, places: number) => void): void;
  stop(): Promise<void>;
}

/**
 * What the gateway knows of its agents, from their announcements. An agent that says
 * `stopping`, or misses three announcements in a row, is gone; that also covers an agent
 * whose connection NATS still holds open (a frozen process, a half-open link to a region),
 * which a request would only find out about by timing out.
 */
export async function startAgentRegistry({
  nc,
  logger,
  settleMs = 500,
  now = Date.now,
}: {
  nc: NatsConnection;
  logger: Logger;
  settleMs?: number;
  now?: () => number;
}): Promise<AgentRegistry> {
  const known = new Map<string, { announcement: AgentAnnouncement; seenAt: number }>();
  const ignored = { count: 0, loggedAt: 0 };
  const ignore = (reason: string, detail: Record<string, unknown>) => {
    ignored.count++;
    if (now() - ignored.loggedAt < IGNORED_LOG_EVERY_MS) return;
    logger.warn({ ...detail, reason, ignoredSinceLastLog: ignored.count }, 'ignored an agent announcement');
    ignored.loggedAt = now();
    ignored.count = 0;
  };
  const silentLocations = new Set<Location>();
  const waiting = new Set<{ location: Location; wake: () => void }>();
  const roomListeners: Array<(location: Location, places: number) => void> = [];
  // Offers waiting to hear that an agent took them, by job id.
  const takeWaiters = new Map<string, { location: Location; resolve: (taken: boolean) => void }>();
  let settled = false;

  const sub: Subscription = nc.subscribe(`${AGENT_ANNOUNCE_PREFIX}.*`, {
    callback: (_error, msg) => {
      let announcement: AgentAnnouncement;
      try {
        announcement = decodeAnnouncement(msg.data);
      } catch (error) {
        logger.warn(
          { err: { message: (error as Error).message } },
          'ignored an announcement that does not match the v1 contract',
        );
        return;
      }
      // The subject is what NATS permissions vouch for; a body claiming another location is not believed.
      if (msg.subject !== `${AGENT_ANNOUNCE_PREFIX}.${announcement.location}`) {
        logger.warn(
          { subject: msg.subject, agentId: announcement.agentId },
          'ignored an announcement for another location than its subject',
        );
        return;
      }
      const before = known.get(announcement.agentId);
      const beforeLive = before !== undefined && isLive(before);
      // An id belongs to the process that announced it first (its `instance`), until that
      // process leaves or goes silent: another agent can neither take it over nor retire it.
      if (
        beforeLive &&
        (before.announcement.location !== announcement.location ||
          (before.announcement.instance !== undefined && before.announcement.instance !== announcement.instance))
      ) {
        ignore('the agent id belongs to another live agent', {
          agentId: announcement.agentId,
          location: announcement.location,
        });
        return;
      }
      if (announcement.state === 'stopping') {
        if (known.delete(announcement.agentId))
          logger.info({ agentId: announcement.agentId, location: announcement.location }, 'agent left');
      } else {
        if (!beforeLive && liveIn(announcement.location) >= MAX_AGENTS_PER_LOCATION) {
          ignore(`the location already has ${MAX_AGENTS_PER_LOCATION} live agents`, {
            agentId: announcement.agentId,
            location: announcement.location,
          });
          return;
        }
        if (!beforeLive)
          logger.info(
            {
              agentId: announcement.agentId,
              location: announcement.location,
              version: announcement.version,
              capacity: announcement.capacity,
            },
            'agent joined',
          );
        known.set(announcement.agentId, { announcement, seenAt: now() });
        silentLocations.delete(announcement.location);
      }
      for (const jobId of announcement.running ?? []) {
        const waiter = takeWaiters.get(jobId);
        if (waiter?.location === announcement.location) waiter.resolve(true);
      }
      if (announcement.state === 'ready' && announcement.busy < announcement.capacity) {
        // As many waiters as the agent has free slots, oldest first: waking every waiter of
        // the location sends them all at one slot, and all but one find no responder again.
        let room = announcement.capacity - announcement.busy;
        for (const listener of roomListeners) listener(announcement.location, room);
        for (const w of waiting) {
          if (room === 0) break;
          if (w.location !== announcement.location) continue;
          w.wake();
          room--;
        }
      }
    },
  });
  nc.publish(AGENT_DISCOVER_SUBJECT);
  // Agents answer the discovery call at once; after a round trip and a short wait for the
  // ones far away, an empty location is really empty.
  await nc.flush();
  const settle = setTimeout(() => {
    settled = true;
  }, settleMs);
  settle.unref();

  function isLive({ announcement, seenAt }: { announcement: AgentAnnouncement; seenAt: number }): boolean {
    return now() - seenAt <= announcement.intervalMs * MISSED_ANNOUNCEMENTS;
  }

  function liveIn(location: Location): number {
    return all().filter((a) => a.location === location).length;
  }

  function all(): AgentAnnouncement[] {
    const live: AgentAnnouncement[] = [];
    for (const [agentId, entry] of known) {
      if (isLive(entry)) live.push(entry.announcement);
      else {
        known.delete(agentId);
        silentLocations.add(entry.announcement.location);
        logger.warn(
          { agentId, location: entry.announcement.location, silentMs: now() - entry.seenAt },
          'agent went silent; counted as gone',
        );
      }
    }
    return live;
  }

  return {
    agents(location) {
      const live = all().filter((a) => a.location === location);
      return live.length > 0 || settled ? live : undefined;
    },
    all,
    silent(location) {
      return all().every((a) => a.location !== location) && silentLocations.has(location);
    },
    confirmsTakes(location) {
      const live = all().filter((a) => a.location === location);
      return live.length > 0 && live.every((a) => a.running !== undefined);
    },
    taken(location, jobId, ms, signal) {
      if (all().some((a) => a.location === location && a.running?.includes(jobId))) return Promise.resolve(true);
      return new Promise((resolve) => {
        let settled = false;
        const settle = (taken: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          if (takeWaiters.get(jobId)?.resolve === settle) takeWaiters.delete(jobId);
          resolve(taken);
        };
        const onAbort = () => settle(true);
        // A gateway whose event loop was held up runs this timer before reading what arrived
        // meanwhile: a round trip to the server first reads every announcement it had sent.
        const timer = setTimeout(() => {
          void nc
            .flush()
            .catch(() => undefined)
            .then(() => settle(false));
        }, ms);
        signal.addEventListener('abort', onAbort, { once: true });
        takeWaiters.set(jobId, { location, resolve: settle });
        if (signal.aborted) settle(true);
      });
    },
    roomIn(location, ms) {
      return new Promise((resolve) => {
        const entry = {
          location,
          wake: () => {
            clearTimeout(timer);
            waiting.delete(entry);
            resolve();
          },
        };
        const timer = setTimeout(entry.wake, ms);
        waiting.add(entry);
      });
    },
    onRoom(listener) {
      roomListeners.push(listener);
    },
    async stop() {
      clearTimeout(settle);
      for (const w of waiting) w.wake();
      for (const w of [...takeWaiters.values()]) w.resolve(true);
      if (!nc.isClosed()) await sub.drain().catch(() => undefined);
    },
  };
}
