import type { NatsConnection } from '@nats-io/nats-core';
import { startAgentRegistry, type AgentRegistry } from '@perfwatch/gateway';
import { spawnPerfwatch, type PerfwatchProcess } from './perfwatch-process.ts';
import { natsWithClient, silentLogger } from './test-services.ts';

export interface AgentUnderTest {
  natsUrl: string;
  /** A gateway-side connection and registry, to dispatch and to watch announcements. */
  nc: NatsConnection;
  registry: AgentRegistry;
  agent: PerfwatchProcess;
  dispose(): Promise<void>;
}

/** One `perfwatch agent` process on a nats-server of its own, watched by a registry. */
export async function agentProcessUnderTest(env: Record<string, string>): Promise<AgentUnderTest> {
  const { nats, client, dispose } = await natsWithClient();
  const registry = await startAgentRegistry({ nc: client, logger: silentLogger });
  const agent = spawnPerfwatch(['agent'], { NATS_URL: nats.url, PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8', ...env });
  return {
    natsUrl: nats.url,
    nc: client,
    registry,
    agent,
    async dispose() {
      await agent.stop('SIGKILL');
      await registry.stop();
      await dispose();
    },
  };
}
