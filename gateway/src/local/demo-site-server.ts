import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';

export interface DemoSite {
  /** Base URL, ending in `/`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves a static site on loopback: the fixture site of the tests, and the demo site of
 * `perfwatch start`. `/slow.html` is held back `slowMs` to stand for a slow origin.
 */
export async function startDemoSite({ root, slowMs = 1500, host = '127.0.0.1', port = 0 }: { root: string; slowMs?: number; host?: string; port?: number }): Promise<DemoSite> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/slow.html', (_req, _res, next) => {
    setTimeout(next, slowMs);
  });
  // A redirect to anywhere: lets tests follow a page that leads somewhere the agent must not go.
  app.get('/redirect', (req, res) => {
    res.redirect(302, String(req.query['to'] ?? '/'));
  });
  app.use(express.static(root, { maxAge: '1h' }));
  const server = app.listen(port, host);
  await once(server, 'listening');
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${bound}/`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
