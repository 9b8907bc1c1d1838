import type { Logger } from 'pino';

/** One thing a program closes on its way out, in the order given. */
export interface ShutdownStep {
  readonly name: string;
  readonly run: () => unknown;
}

export interface ShutdownOptions {
  logger: Logger;
  /** Past this, the program exits with code 1, whatever is still closing. */
  deadlineMs: number;
  /** What ends a shutdown past its deadline; exits with code 1 unless given (tests give it). */
  onDeadline?: (pending: string) => void;
}

/**
 * Every program's way out, ordered and with a deadline: stop taking work, finish what is in
 * flight, drain NATS, close the database, flush the logs (STYLE.md). Steps run one after
 * another; a step that fails is logged and the next still runs, since leaving NATS undrained or
 * the database open because an earlier step failed loses more. The first call starts it; any
 * later one (a second signal) gets the same promise.
 */
export function createShutdown(
  { logger, deadlineMs, onDeadline }: ShutdownOptions,
  steps: readonly ShutdownStep[],
): (reason: string) => Promise<void> {
  let started: Promise<void> | undefined;
  return (reason) => (started ??= run(reason));

  async function run(reason: string): Promise<void> {
    logger.info({ reason }, 'shutting down');
    let pending = steps[0]?.name ?? '';
    const deadline = setTimeout(() => {
      logger.error({ pending, deadlineMs }, 'shutdown deadline passed; exiting');
      logger.flush();
      if (onDeadline) onDeadline(pending);
      else process.exit(1);
    }, deadlineMs);
    deadline.unref();
    for (const step of steps) {
      pending = step.name;
      try {
        await step.run();
      } catch (error) {
        logger.error({ err: error, step: step.name }, 'a shutdown step failed; going on with the next');
      }
    }
    clearTimeout(deadline);
    logger.flush();
  }
}

/** Shuts the program down on SIGTERM and SIGINT (once: a second signal waits for the first). */
export function shutdownOnSignals(shutdown: (reason: string) => Promise<void>): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown(signal));
}
