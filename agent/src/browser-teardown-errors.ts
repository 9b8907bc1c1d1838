import type { Logger } from 'pino';

/**
 * Lighthouse drives Chrome through puppeteer, which fires some protocol commands without
 * awaiting them. When the agent kills a Chrome in the middle of a run (the run timed out), those
 * commands reject with nobody listening. Such a rejection says only "the browser we killed is
 * gone"; any other unhandled rejection is a real bug.
 */
export function isBrowserTeardownError(reason: unknown): boolean {
  const error = reason as { name?: unknown; message?: unknown; protocolMethod?: unknown } | null;
  if (typeof error?.name !== 'string' || typeof error.message !== 'string') return false;
  if (error.name === 'TargetCloseError' || error.name === 'ProtocolError' || error.name === 'ConnectionClosedError') {
    return /Target closed|Session closed|Connection closed|Protocol error/.test(error.message);
  }
  // Lighthouse rewraps a failed command it sent (e.g. the navigation of a page that never
  // answered) as a plain Error carrying the protocol method: the same "browser gone" news.
  return (
    error.name === 'Error' &&
    typeof error.protocolMethod === 'string' &&
    /Target closed|Session closed|Connection closed/.test(error.message)
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
