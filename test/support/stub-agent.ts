/**
 * An agent process whose Lighthouse is the fixture runner: for suites about delivery (kills,
 * restarts), where real Lighthouse would only add minutes. Run with Node 24:
 *   NATS_URL=… PERFWATCH_LOCATION=london PERFWATCH_AGENT_ID=a node test/support/stub-agent.ts
 */
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { LOCATIONS } from '@perfwatch/common';
import { startAgent } from '@perfwatch/agent';
import { z } from 'zod';
import { fixtureRunner } from './fixture-runner.ts';

const env = z
  .object({
    NATS_URL: z.string(),
    PERFWATCH_LOCATION: z.enum(LOCATIONS),
    PERFWATCH_AGENT_ID: z.string(),
    STUB_DELAY_MS: z.coerce.number().int().nonnegative().default(200),
  })
  .parse(process.env);
const logger = pino({ level: 'warn' });
const nc = await connect({
  servers: env.NATS_URL,
  maxReconnectAttempts: -1,
  reconnectTimeWait: 250,
  name: `stub-${env.PERFWATCH_AGENT_ID}`,
});
const agent = startAgent({
  nc,
  location: env.PERFWATCH_LOCATION,
  runner: fixtureRunner({ delayMs: env.STUB_DELAY_MS }),
  logger,
  agentId: env.PERFWATCH_AGENT_ID,
  announceIntervalMs: 1_000,
});
process.stdout.write('stub agent serving\n');
process.once('SIGTERM', () => {
  void agent
    .stop()
    .then(() => nc.drain())
    .finally(() => process.exit(0));
});
