import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findRedirectLoop } from './redirect-probe.ts';
import { createTargetGuard } from '@perfwatch/common';

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const n = Number(url.searchParams.get('n') ?? 0);
    if (url.pathname === '/loop') res.writeHead(302, { Location: '/loop' }).end();
    else if (url.pathname === '/onward') res.writeHead(301, { Location: `/onward?n=${n + 1}` }).end();
    else if (url.pathname === '/five')
      res.writeHead(n < 5 ? 302 : 200, n < 5 ? { Location: `/five?n=${n + 1}` } : {}).end('done');
    else res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => server.close());

describe('findRedirectLoop', () => {
  it('names a page that redirects to itself, or onwards past 20 hops', async () => {
    expect(await findRedirectLoop(`${base}/loop`)).toBe(
      `the page redirects more than 20 times in a loop (${base}/loop → ${base}/loop → … → ${base}/loop)`,
    );
    expect(await findRedirectLoop(`${base}/onward`)).toBe(
      `the page redirects more than 20 times (${base}/onward → ${base}/onward?n=1 → … → ${base}/onward?n=21)`,
    );
  });

  it('says nothing of redirects that end, or of a page that does not answer', async () => {
    expect(await findRedirectLoop(`${base}/five`)).toBeNull();
    expect(await findRedirectLoop('http://127.0.0.1:9/')).toBeNull();
  });

  it('goes nowhere the target guard refuses', async () => {
    expect(await findRedirectLoop(`${base}/loop`, { guard: createTargetGuard({ allow: [] }) })).toBeNull();
  });
});
