import type { NatsConnection } from '@nats-io/nats-core';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

/**
 * A Prometheus registry of one program instance's own, with Node's default process metrics:
 * two instances in one process (as in tests) never share counters.
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // prom-client names these gauges with a `_total` suffix, which Prometheus reserves for
  // counters (promtool check metrics fails them); process_* and nodejs_heap_* tell the same story.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
    registry.removeSingleMetric(name);
  return registry;
}

/** `perfwatch_nats_connected`: 1 while the connection is up, 0 while it reconnects or once it closed. */
export function registerNatsConnected(registry: Registry, nc: NatsConnection): void {
  let reconnecting = false;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnecting') reconnecting = true;
      if (status.type === 'reconnect') reconnecting = false;
    }
  })().catch(() => undefined);
  new Gauge({
    name: 'perfwatch_nats_connected',
    help: 'Whether the NATS connection is up (1) or not (0).',
    registers: [registry],
    collect() {
      this.set(nc.isClosed() || nc.isDraining() || reconnecting ? 0 : 1);
    },
  });
}
