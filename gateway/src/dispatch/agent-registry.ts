import type { AgentAnnouncement, Location } from '@perfwatch/common';

/**
 * The agents a transport can reach, as the dispatcher, readiness and metrics ask about them:
 * built from NATS announcements (nats/agent-registry.ts) or from the agents in this process
 * (local/local-transport.ts).
 */
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
