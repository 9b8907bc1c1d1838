import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError } from '@perfwatch/common';
import { createApp, type AppDeps } from './app.ts';

export interface GatewayServer {
  port: number;
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Builds the app and listens. `close` stops accepting, lets open requests finish, then closes idle sockets. */
export async function createServer(deps: AppDeps & { port: number; host: string }): Promise<GatewayServer> {
  const app = createApp(deps);
  const server = app.listen(deps.port, deps.host);
  // Requests Node's HTTP parser refuses never reach the app; they still get the API's envelope.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const body = JSON.stringify(
      new ApiError('BAD_REQUEST', tooLarge ? 'The URL and headers are too large.' : 'The request is not valid HTTP.', [tooLarge ? 'request line and headers: larger than 16 kB together' : `http: ${error.code ?? 'malformed request'}`]).toEnvelope(),
    );
    socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  await once(server, 'listening');
  // A sync update can take minutes; Node's default 5 min request timeout would cut it.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  const { port } = server.address() as AddressInfo;
  const host = deps.host === '0.0.0.0' || deps.host === '::' ? '127.0.0.1' : deps.host;
  return {
    port,
    url: `http://${host}:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}
