import { once } from 'node:events';
import { createServer as createHttpServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError } from '@perfwatch/common';
import { createApp, type AppDeps } from './app.ts';

export interface GatewayServer {
  port: number;
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** How long a client may take to send a request: its headers, and all of it. */
export interface RequestTimeouts {
  headersMs: number;
  requestMs: number;
}

/**
 * Builds the app and listens. `close` stops accepting, lets open requests finish, then closes
 * idle sockets. Node's request timeout covers receiving the request only (a sync update's
 * minutes of work after it are not cut); a client that trickles its headers or body is
 * answered 408 and disconnected, checked every second.
 */
export async function createServer(
  deps: AppDeps & { port: number; host: string; timeouts: RequestTimeouts },
): Promise<GatewayServer> {
  const app = createApp(deps);
  const { headersMs, requestMs } = deps.timeouts;
  const server = createHttpServer(
    { headersTimeout: headersMs, requestTimeout: requestMs, connectionsCheckingInterval: 1_000 },
    app,
  );
  server.listen(deps.port, deps.host);
  // Requests Node's HTTP parser refuses never reach the app; they still get the API's envelope.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const refused = clientErrorOf(error.code, { headersMs, requestMs });
    const body = JSON.stringify(refused.toEnvelope());
    socket.end(
      `HTTP/1.1 ${refused.httpStatus} ${STATUS_CODES[refused.httpStatus]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  await once(server, 'listening');
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

/** What a request Node's HTTP parser refused gets, in the API's envelope. */
function clientErrorOf(code: string | undefined, { headersMs, requestMs }: RequestTimeouts): ApiError {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new ApiError('REQUEST_TIMEOUT', 'The request took too long to arrive.', [
      `headers: within ${headersMs} ms; the whole request: within ${requestMs} ms`,
    ]);
  }
  if (code === 'HPE_HEADER_OVERFLOW')
    return new ApiError('BAD_REQUEST', 'The URL and headers are too large.', [
      'request line and headers: larger than 16 kB together',
    ]);
  return new ApiError('BAD_REQUEST', 'The request is not valid HTTP.', [`http: ${code ?? 'malformed request'}`]);
}
