import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGuardProxy, type GuardProxy } from './guard-proxy.ts';
import { createTargetGuard, parseAllowList } from '@perfwatch/common';

/**
 * An origin that keeps connections alive after its first answer and then drops each one the
 * moment a second request arrives on it: what a server's idle keep-alive timeout does when it
 * fires as a client reuses the connection (Node's own default is 5 s, and on a loaded machine
 * the client's timer for giving the connection up runs late).
 */
let origin: Server;
let originPort: number;
let connections = 0;
let proxy: GuardProxy;

beforeAll(async () => {
  origin = createServer((socket: Socket) => {
    connections++;
    let answered = 0;
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      while (buffered.includes('\r\n\r\n')) {
        const end = buffered.indexOf('\r\n\r\n') + 4;
        const head = buffered.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + length) return;
        buffered = buffered.slice(end + length);
        if (answered++ > 0) {
          socket.resetAndDestroy();
          return;
        }
        const body = `answered on connection ${connections}`;
        socket.write(
          `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\n${body}`,
        );
      }
    });
    socket.on('error', () => {});
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  originPort = (origin.address() as AddressInfo).port;
  proxy = await startGuardProxy({
    guard: createTargetGuard({ allow: parseAllowList('127.0.0.0/8') }),
    logger: pino({ level: 'silent' }),
  });
});

afterAll(async () => {
  await proxy.close();
  origin.close();
});

/** One request through the proxy the way Chrome sends plain HTTP to it: the absolute URL as the path. */
async function viaProxy(method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  const { port } = new URL(proxy.url);
  const req = request({
    host: '127.0.0.1',
    port: Number(port),
    method,
    path: `http://127.0.0.1:${originPort}${path}`,
    agent: false,
    headers: body === undefined ? {} : { 'Content-Length': Buffer.byteLength(body) },
  });
  req.end(body);
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  let text = '';
  for await (const chunk of res) text += String(chunk);
  return { status: res.statusCode ?? 0, text };
}

describe('the guard proxy, forwarding plain HTTP', () => {
  it('sends a request again on a new connection when the origin drops the kept-alive one it went out on', async () => {
    expect(await viaProxy('GET', '/first')).toMatchObject({ status: 200 });
    // The origin drops the proxy's kept-alive connection as this request arrives on it:
    // a browser talking to the origin itself sends it again, and so must the proxy, or the page
    // shows the proxy's 502 (Lighthouse: ERRORED_DOCUMENT_REQUEST) for a server that was fine.
    const again = await viaProxy('GET', '/second');
    expect(again.status, again.text).toBe(200);
    expect(again.text).toMatch(/^answered on connection \d+$/);
  });

  it('never sends a request with a body on a kept-alive connection, so it is never sent twice', async () => {
    expect(await viaProxy('GET', '/warm')).toMatchObject({ status: 200 });
    const posted = await viaProxy('POST', '/form', 'a=1');
    expect(posted.status, posted.text).toBe(200);
  });
});
