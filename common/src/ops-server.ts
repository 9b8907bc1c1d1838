import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface OpsServer {
  url: string;
  close(): Promise<void>;
}

export interface Readiness {
  ok: boolean;
  /** Why not, for the operator reading /readyz. */
  reason?: string;
}

/** What `/readyz` answers for a readiness, on the ops port and the gateway's own port alike. */
export function readinessAnswer(state: Readiness): {
  status: 200 | 503;
  body: { status: 'ready' } | { status: 'not ready'; reason?: string };
} {
  return state.ok
    ? { status: 200, body: { status: 'ready' } }
    : { status: 503, body: { status: 'not ready', ...(state.reason !== undefined ? { reason: state.reason } : {}) } };
}

/**
 * A small HTTP port for operators: `/metrics` (Prometheus), `/healthz` (the process answers)
 * and `/readyz` (it can take work). The agent's only HTTP surface, and the gateway's when
 * OPS_PORT keeps them off its public port; plain node:http, for three fixed answers.
 */
export async function startOpsServer({
  port,
  host,
  registry,
  ready,
}: {
  port: number;
  host: string;
  registry: Registry;
  ready: () => Readiness | Promise<Readiness>;
}): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://agent').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'application/json' })
        .end(JSON.stringify({ status: 'method not allowed' }));
      return;
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
        (error: unknown) =>
          res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${(error as Error).message}`),
      );
    } else if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
    } else if (path === '/readyz') {
      Promise.resolve()
        .then(ready)
        .then(
          (state) => {
            const answer = readinessAnswer(state);
            res.writeHead(answer.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer.body));
          },
          (error: unknown) =>
            res
              .writeHead(503, { 'Content-Type': 'application/json' })
              .end(JSON.stringify({ status: 'not ready', reason: (error as Error).message })),
        );
    } else {
      res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status: 'not found' }));
    }
  });
  server.listen(port, host);
  await once(server, 'listening');
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
