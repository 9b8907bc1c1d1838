import { once } from 'node:events';
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { TargetRefused, type TargetGuard } from '@perfwatch/common';

/**
 * A forward proxy on loopback that Chrome is told to use for everything (loopback included),
 * so every request of a run — the page, each redirect, each subresource — passes the target
 * guard after DNS resolution, and is connected to the very address that was checked. HTTPS
 * goes through CONNECT untouched (end to end TLS); plain HTTP is forwarded.
 *
 * Written here because no maintained npm proxy lets a hook choose the address connected to,
 * which is what defeats DNS rebinding.
 */
export interface GuardProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Hosts refused since the last `takeRefusals()`. */
  takeRefusals(): string[];
  close(): Promise<void>;
}

export async function startGuardProxy({ guard, logger }: { guard: TargetGuard; logger: Logger }): Promise<GuardProxy> {
  let refusals: string[] = [];
  const sockets = new Set<Socket>();

  const refuse = (host: string, error: unknown) => {
    if (!(error instanceof TargetRefused)) return false;
    if (error.kind === 'unresolvable') {
      logger.debug({ target: { host } }, error.message);
      return false;
    }
    refusals.push(host);
    logger.warn({ target: { host } }, error.message);
    return true;
  };

  // The proxy's own pool of origin connections, kept apart from anything else this process fetches.
  const keepAlive = new Agent({ keepAlive: true });
  const server = createServer(forwardHttp(guard, refuse, keepAlive));
  server.on('connect', tunnel(guard, refuse, sockets));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    takeRefusals() {
      const taken = refusals;
      refusals = [];
      return taken;
    },
    close: () =>
      new Promise<void>((resolve) => {
        keepAlive.destroy();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Says whether a host was refused by the guard (logged), rather than unresolvable. */
type Refuse = (host: string, error: unknown) => boolean;

/** Plain HTTP: the request forwarded to the address the guard checked. */
function forwardHttp(guard: TargetGuard, refuse: Refuse, keepAlive: Agent) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let target: URL;
    try {
      target = new URL(req.url ?? '');
      if (target.protocol !== 'http:') throw new Error('only http:// is forwarded; https goes through CONNECT');
    } catch (error) {
      res.writeHead(400, { 'Content-Type': 'text/plain' }).end(`bad proxy request: ${(error as Error).message}`);
      return;
    }
    let address: string;
    try {
      ({ address } = await guard.resolve(target.hostname));
    } catch (error) {
      const refused = refuse(target.hostname, error);
      res.writeHead(refused ? 403 : 502, { 'Content-Type': 'text/plain' }).end((error as Error).message);
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    const send = (agent: Agent | false) => {
      const upstream = httpRequest(
        {
          host: address,
          port: Number(target.port || 80),
          method: req.method,
          path: `${target.pathname}${target.search}`,
          headers,
          setHost: false,
          agent,
        },
        (upstreamRes) => {
          res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.rawHeaders as unknown as Record<string, string>);
          upstreamRes.pipe(res);
        },
      );
      upstream.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive connection the origin closed as this request went out on it: sent again
        // on a new one, as a browser talking to the origin itself does, or the page would show
        // the proxy's 502 for a server that was fine. Only requests without a body go out on
        // kept-alive connections, so nothing is ever sent twice that the origin may have acted on.
        if (upstream.reusedSocket && !res.headersSent && RETRIABLE.has(error.code ?? '')) {
          send(false).end();
          return;
        }
        if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
        res.end(`upstream failed: ${error.message}`);
      });
      return upstream;
    };
    if (hasBody) req.pipe(send(false));
    else send(keepAlive).end();
  };
}

/** The origin's connection closed under a request that went out on it: nothing of it was answered. */
const RETRIABLE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** CONNECT (HTTPS, end to end): a tunnel to the address the guard checked. */
function tunnel(guard: TargetGuard, refuse: Refuse, sockets: Set<Socket>) {
  return async (req: IncomingMessage, client: Socket, head: Buffer): Promise<void> => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const [host = '', portText = '443'] = (req.url ?? '').split(/:(?=\d+$)/);
    try {
      const { address } = await guard.resolve(host);
      const upstream = connect(Number(portText), address, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      sockets.add(upstream);
      upstream.once('close', () => sockets.delete(upstream));
      upstream.on('error', () => {
        if (!client.destroyed) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      });
    } catch (error) {
      const refused = refuse(host, error);
      client.end(`HTTP/1.1 ${refused ? '403 Forbidden' : '502 Bad Gateway'}\r\n\r\n`);
    }
  };
}
