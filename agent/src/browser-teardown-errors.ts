import type { Logger } from 'pino';

/**
 * Lighthouse drives Chrome through puppeteer, which fires some protocol commands without
 * awaiting them. When the agent kills a Chrome in the middle of a run (the run timed out), those
 * commands reject with nobody listening. Such a rejection says only "the browser we killed is
 * gone"; any other unhandled rejection is a real bug.
 */
export function isBrowserTeardownError(reason: unknown): boolean {
  const error = reason as { name?: unknown; message?: unknown } | null;
  return (
    typeof error?.name === 'string' &&
    (error.name === 'TargetCloseError' || error.name === 'ProtocolError' || error.name === 'ConnectionClosedError') &&
    typeof error.message === 'string' &&
    /Target closed|Session closed|Connection closed|Protocol error/.test(error.message)
  );
}

/**
 * A process running Lighthouse: ignore the rejections a killed Chrome leaves behind, and treat
 * any other unhandled rejection as the crash it is.
 */
export function exitOnUnhandledRejection(logger: Logger): void {
  process.on('unhandledRejection', (reason) => {
    if (isBrowserTeardownError(reason)) {
      logger.debug({ err: reason }, 'a killed Chrome left a protocol command unanswered');
      return;
    }
    logger.fatal({ err: reason }, 'unhandled rejection');
    logger.flush();
    process.exit(1);
  });
}
