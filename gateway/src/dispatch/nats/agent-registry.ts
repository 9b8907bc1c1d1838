import type { Msg, NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { AgentRegistry } from '../agent-registry.ts';
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
  const registry = new NatsAgentRegistry(nc, logger, now);
  registry.listen();
  nc.publish(AGENT_DISCOVER_SUBJECT);
  // Agents answer the discovery call at once; after a round trip and a short wait for the
  // ones far away, an empty location is really empty.
  await nc.flush();
  registry.settleAfter(settleMs);
  return registry;
}

interface KnownAgent {
  announcement: AgentAnnouncement;
  seenAt: number;
}

/** An offer waiting to hear that an agent of its location took its job. */
interface TakeWaiter {
  location: Location;
  resolve: (taken: boolean) => void;
}

class NatsAgentRegistry implements AgentRegistry {
  readonly #known = new Map<string, KnownAgent>();
  readonly #ignored = { count: 0, loggedAt: 0 };
  readonly #silentLocations = new Set<Location>();
  readonly #waiting = new Set<{ location: Location; wake: () => void }>();
  readonly #roomListeners: Array<(location: Location, places: number) => void> = [];
  /** By job id. */
  readonly #takeWaiters = new Map<string, TakeWaiter>();
  #settled = false;
  #settle: NodeJS.Timeout | undefined;
  #sub: Subscription | undefined;

  readonly #nc: NatsConnection;
  readonly #logger: Logger;
  readonly #now: () => number;

  constructor(nc: NatsConnection, logger: Logger, now: () => number) {
    this.#nc = nc;
    this.#logger = logger;
    this.#now = now;
  }

  listen(): void {
    this.#sub = this.#nc.subscribe(`${AGENT_ANNOUNCE_PREFIX}.*`, {
      callback: (_error, msg) => this.#heard(msg),
    });
  }

  settleAfter(ms: number): void {
    this.#settle = setTimeout(() => {
      this.#settled = true;
    }, ms);
    this.#settle.unref();
  }

  #heard(msg: Msg): void {
    const believed = this.#believed(msg);
    if (!believed) return;
    const { announcement, wasLive } = believed;
    if (announcement.state === 'stopping') {
      if (this.#known.delete(announcement.agentId))
        this.#logger.info({ agentId: announcement.agentId, location: announcement.location }, 'agent left');
    } else if (!this.#recorded(announcement, wasLive)) {
      return;
    }
    for (const jobId of announcement.running ?? []) {
      const waiter = this.#takeWaiters.get(jobId);
      if (waiter?.location === announcement.location) waiter.resolve(true);
    }
    if (announcement.state === 'ready' && announcement.busy < announcement.capacity) this.#roomAt(announcement);
  }

  /**
   * The announcement, when it matches the contract, its subject (what NATS permissions vouch
   * for: a body claiming another location is not believed) and its id's owner: an id belongs to
   * the process that announced it first (its `instance`) until that process leaves or goes
   * silent, so another agent can neither take it over nor retire it. With it, whether its id
   * was live before it.
   */
  #believed(msg: Msg): { announcement: AgentAnnouncement; wasLive: boolean } | null {
    let announcement: AgentAnnouncement;
    try {
      announcement = decodeAnnouncement(msg.data);
    } catch (error) {
      this.#logger.warn(
        { err: { message: (error as Error).message } },
        'ignored an announcement that does not match the v1 contract',
      );
      return null;
    }
    const { agentId, location, instance } = announcement;
    if (msg.subject !== `${AGENT_ANNOUNCE_PREFIX}.${location}`) {
      this.#logger.warn(
        { subject: msg.subject, agentId },
        'ignored an announcement for another location than its subject',
      );
      return null;
    }
    const before = this.#known.get(agentId);
    const wasLive = before !== undefined && this.#isLive(before);
    if (
      wasLive &&
      (before.announcement.location !== location ||
        (before.announcement.instance !== undefined && before.announcement.instance !== instance))
    ) {
      this.#ignore('the agent id belongs to another live agent', { agentId, location });
      return null;
    }
    return { announcement, wasLive };
  }

  /** Records a live agent's announcement; false when its location is full and it is new there. */
  #recorded(announcement: AgentAnnouncement, wasLive: boolean): boolean {
    const { agentId, location, version, capacity } = announcement;
    if (!wasLive) {
      if (this.#liveIn(location) >= MAX_AGENTS_PER_LOCATION) {
        this.#ignore(`the location already has ${MAX_AGENTS_PER_LOCATION} live agents`, { agentId, location });
        return false;
      }
      this.#logger.info({ agentId, location, version, capacity }, 'agent joined');
    }
    this.#known.set(agentId, { announcement, seenAt: this.#now() });
    this.#silentLocations.delete(location);
    return true;
  }

  /**
   * As many waiters as the agent has free runners, oldest first: waking every waiter of the
   * location sends them all at one runner, and all but one find no responder again.
   */
  #roomAt({ location, capacity, busy }: AgentAnnouncement): void {
    let room = capacity - busy;
    for (const listener of this.#roomListeners) listener(location, room);
    for (const w of this.#waiting) {
      if (room === 0) break;
      if (w.location !== location) continue;
      w.wake();
      room--;
    }
  }

  #ignore(reason: string, detail: Record<string, unknown>): void {
    this.#ignored.count++;
    if (this.#now() - this.#ignored.loggedAt < IGNORED_LOG_EVERY_MS) return;
    this.#logger.warn({ ...detail, reason, ignoredSinceLastLog: this.#ignored.count }, 'ignored an agent announcement');
    this.#ignored.loggedAt = this.#now();
    this.#ignored.count = 0;
  }

  #isLive({ announcement, seenAt }: KnownAgent): boolean {
    return this.#now() - seenAt <= announcement.intervalMs * MISSED_ANNOUNCEMENTS;
  }

  #liveIn(location: Location): number {
    return this.all().filter((a) => a.location === location).length;
  }

  all(): AgentAnnouncement[] {
    const live: AgentAnnouncement[] = [];
    for (const [agentId, entry] of this.#known) {
      if (this.#isLive(entry)) live.push(entry.announcement);
      else {
        this.#known.delete(agentId);
        this.#silentLocations.add(entry.announcement.location);
        this.#logger.warn(
          { agentId, location: entry.announcement.location, silentMs: this.#now() - entry.seenAt },
          'agent went silent; counted as gone',
        );
      }
    }
    return live;
  }

  agents(location: Location): AgentAnnouncement[] | undefined {
    const live = this.all().filter((a) => a.location === location);
    return live.length > 0 || this.#settled ? live : undefined;
  }

  silent(location: Location): boolean {
    return this.all().every((a) => a.location !== location) && this.#silentLocations.has(location);
  }

  confirmsTakes(location: Location): boolean {
    const live = this.all().filter((a) => a.location === location);
    return live.length > 0 && live.every((a) => a.running !== undefined);
  }

  taken(location: Location, jobId: string, ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.all().some((a) => a.location === location && a.running?.includes(jobId))) return Promise.resolve(true);
    return new Promise((resolve) => {
      let settled = false;
      const settle = (taken: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (this.#takeWaiters.get(jobId)?.resolve === settle) this.#takeWaiters.delete(jobId);
        resolve(taken);
      };
      const onAbort = () => settle(true);
      // A gateway whose event loop was held up runs this timer before reading what arrived
      // meanwhile: a round trip to the server first reads every announcement it had sent.
      const timer = setTimeout(() => {
        void this.#nc
          .flush()
          .catch(() => undefined)
          .then(() => settle(false));
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#takeWaiters.set(jobId, { location, resolve: settle });
      if (signal.aborted) settle(true);
    });
  }

  roomIn(location: Location, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const entry = {
        location,
        wake: () => {
          clearTimeout(timer);
          this.#waiting.delete(entry);
          resolve();
        },
      };
      const timer = setTimeout(entry.wake, ms);
      this.#waiting.add(entry);
    });
  }

  onRoom(listener: (location: Location, places: number) => void): void {
    this.#roomListeners.push(listener);
  }

  async stop(): Promise<void> {
    clearTimeout(this.#settle);
    for (const w of this.#waiting) w.wake();
    for (const w of [...this.#takeWaiters.values()]) w.resolve(true);
    if (this.#sub && !this.#nc.isClosed()) await this.#sub.drain().catch(() => undefined);
  }
}
