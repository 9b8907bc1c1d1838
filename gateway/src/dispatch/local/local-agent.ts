import type { AuditJob, AuditReply, Location } from '@perfwatch/common';

/**
 * What the gateway needs of an agent living in its own process (`perfwatch start` without NATS):
 * the program that starts the gateway builds it and hands it in, so the gateway never depends
 * on the agent's package.
 */
export interface LocalAgent {
  readonly location: Location;
  readonly agentId: string;
  readonly capacity: number;
  /** Runs going on now. */
  readonly busy: number;
  /** Runs waiting for a free runner. */
  readonly waiting: number;
  /** Runs the job once a runner is free; the reply is a failure rather than a throw. */
  run(job: AuditJob, requestId: string | undefined): Promise<AuditReply>;
}
