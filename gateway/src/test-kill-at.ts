import { writeSync } from 'node:fs';
import type { Logger } from 'pino';
import type { TestKillPoint } from './alerts/webhook-outbox.ts';
import type { GatewayConfig } from './config.ts';

/** PERFWATCH_TEST_KILL_AT's fault: the process dies at once at that point, as a SIGKILL from outside would kill it. */
export function testKillAt({ PERFWATCH_TEST_KILL_AT: at }: GatewayConfig, logger: Logger) {
  if (!at) return undefined;
  logger.warn({ at }, 'PERFWATCH_TEST_KILL_AT is set: this gateway kills itself there (tests only)');
  return (point: TestKillPoint) => {
    if (point !== at) return;
    // Straight to stderr: a line pino writes asynchronously would die with the process.
    writeSync(
      2,
      `${JSON.stringify({ level: 40, time: Date.now(), at, msg: 'PERFWATCH_TEST_KILL_AT reached: SIGKILL' })}\n`,
    );
    process.kill(process.pid, 'SIGKILL');
  };
}
