import type { AuditJob, AuditReply } from './audit-messages.ts';
import type { ArtifactKind } from './artifact-messages.ts';
import type { Location } from './ids.ts';

/**
 * An agent living in the gateway's process (`perfwatch start` without NATS), as the gateway
 * uses it. Declared here so the agent implements it and the gateway takes it without either
 * package depending on the other.
 */
export interface InProcessAgent {
  readonly location: Location;
  readonly agentId: string;
  readonly capacity: number;
  /** Runs going on now. */
  readonly busy: number;
  /** Runs waiting for a free runner. */
  readonly waiting: number;
  /** Runs the job once a runner is free; the reply is a failure rather than a throw. */
  run(job: AuditJob, requestId: string | undefined): Promise<AuditReply>;
  /**
   * A run's artifact of `kind`, gzipped, taken once (docs/artifacts.md); undefined when the run
   * left none or it is gone. Absent: the agent keeps no artifacts.
   */
  takeArtifact?(jobId: string, kind: ArtifactKind): { gzip: Uint8Array; truncated: boolean } | undefined;
}
