import type { Logger } from 'pino';
import { decodeJob, decodeReply, encodeJob, encodeReply, type AuditJob, type Location } from '@perfwatch/common';
import type { InProcessAgent } from '@perfwatch/common';
import { FairWaitingRoom, type Ticket } from '../fair-waiting-room.ts';
import { replyOutcome, type DispatchOptions, type Dispatcher, type RunOutcome } from '../run-outcome.ts';

/** An in-process agent, the runs it was handed and not yet done with, and the runs waiting for one of its places. */
interface Line {
  readonly agent: InProcessAgent;
  readonly room: FairWaitingRoom;
  handed: number;
}

const timedOut = (location: Location, timeoutMs: number): RunOutcome => ({
  ok: false,
  error: { code: 'TIMEOUT', message: `no reply from ${location} within ${timeoutMs} ms` },
});

/**
 * The in-process bus of `perfwatch start` without NATS: runs go straight to agents in this
 * process. Jobs and replies still pass through the v1 encoders and their zod schemas, so the
 * gateway sees exactly what it would over NATS; a location with no local agent answers like
 * one without responders (503 for an update that has nothing else).
 *
 * An agent is handed no more runs than its capacity: the others wait in the location's fair
 * waiting room, as they do over NATS, so one user's backlog does not hold another user's run
 * back (the agent's own line would take them in arrival order).
 */
export function createLocalDispatcher({
  agents,
  logger,
}: {
  agents: readonly InProcessAgent[];
  logger: Logger;
}): Dispatcher {
  const lines = new Map(agents.map((agent) => [agent.location, { agent, room: new FairWaitingRoom(), handed: 0 }]));
  return {
    async dispatch(job, options): Promise<RunOutcome> {
      const line = lines.get(job.location);
      if (!line) return { ok: false, error: { code: 'NO_RESPONDERS', message: `no agent serves ${job.location}` } };
      const deadline = Date.now() + options.timeoutMs;
      if (!(await placeFor(line, line.room.enter(options.user ?? ''), deadline)))
        return timedOut(job.location, options.timeoutMs);
      return runOn(line, job, options, deadline, logger);
    },
    waiting: (location: Location) => {
      const line = lines.get(location);
      return line ? line.room.waiting + line.agent.waiting : 0;
    },
  };
}

/**
 * Resolves `true` once the run holds one of the agent's places (counted in `handed` at once, so
 * no one else takes it meanwhile), `false` at the deadline. A run ranked after runs waiting
 * waits behind them; each place that frees wakes the best ranked (runOn).
 */
function placeFor(line: Line, ticket: Ticket, deadline: number): Promise<boolean> {
  return new Promise((resolve) => {
    const attempt = () => {
      if (line.handed < line.agent.capacity && !line.room.behind(ticket)) {
        line.handed++;
        line.room.leave(ticket);
        return resolve(true);
      }
      const left = deadline - Date.now();
      if (left > 0) return line.room.wait(ticket, left, attempt);
      line.room.leave(ticket);
      resolve(false);
    };
    attempt();
  });
}

/**
 * The run on the line's agent, until its reply or the deadline; its place is given back when the
 * agent is done with it, which may be after the deadline.
 */
async function runOn(
  line: Line,
  job: AuditJob,
  { requestId, timeoutMs }: DispatchOptions,
  deadline: number,
  logger: Logger,
): Promise<RunOutcome> {
  // Through a promise, so that even a job the encoders refuse gives its place back.
  const running = Promise.resolve()
    .then(() => line.agent.run(decodeJob(encodeJob(job)), requestId))
    .finally(() => {
      line.handed--;
      line.room.wake(1);
    });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), deadline - Date.now())));
  try {
    const reply = await Promise.race([running.then(encodeReply), late]);
    if (reply === null) return timedOut(job.location, timeoutMs);
    return replyOutcome(await decodeReply(reply, 'gzip'));
  } catch (error) {
    logger.error({ err: error, jobId: job.jobId, requestId }, 'local dispatch failed');
    return { ok: false, error: { code: 'INTERNAL', message: `dispatch failed: ${(error as Error).message}` } };
  } finally {
    clearTimeout(timer);
  }
}
