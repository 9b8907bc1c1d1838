import type { NatsConnection } from '@nats-io/nats-core';
import { Gauge, Histogram, type Registry } from 'prom-client';
import { createMetricsRegistry, registerNatsConnected, type Device, type Location } from '@perfwatch/common';

/** What the agent reports as it works; metrics are one listener. */
export interface RunObserver {
  /** One run and how it ended: `ok` or its failure code. */
  runDone(device: Device, outcome: string, seconds: number): void;
}

export interface AgentMetrics extends RunObserver {
  registry: Registry;
}

/**
 * An agent's Prometheus metrics: run durations by device and outcome, its capacity and how
 * busy it is, the NATS connection, Node's process metrics. Labelled with the location so
 * one Prometheus can scrape every region's agents; never with a URL.
 */
export function createAgentMetrics({
  nc,
  location,
  agent,
}: {
  nc: NatsConnection;
  location: Location;
  agent: () => { busy: number; capacity: number } | null;
}): AgentMetrics {
  const registry = createMetricsRegistry();
  const runs = new Histogram({
    name: 'perfwatch_lighthouse_run_duration_seconds',
    help: 'Lighthouse runs by location, device and outcome (ok or the failure code).',
    labelNames: ['location', 'device', 'outcome'] as const,
    buckets: [1, 2.5, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180],
    registers: [registry],
  });
  for (const [name, help, read] of [
    [
      'perfwatch_agent_capacity',
      'Runs this agent does at once.',
      (a: { busy: number; capacity: number }) => a.capacity,
    ],
    ['perfwatch_agent_busy', 'Runs going on in this agent now.', (a: { busy: number; capacity: number }) => a.busy],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: ['location'] as const,
      registers: [registry],
      collect() {
        const state = agent();
        this.set({ location }, state ? read(state) : 0);
      },
    });
  }
  registerNatsConnected(registry, nc);
  return {
    registry,
    runDone(device, outcome, seconds) {
      runs.observe({ location, device, outcome: outcome.toLowerCase() }, seconds);
    },
  };
}
