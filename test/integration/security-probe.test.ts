import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTargetGuard, parseAllowList } from '@perfwatch/common';
import { probeSecurity } from '../../agent/src/security-probe.ts';

// The agent's look at a page's transport and headers, against a local TLS server with a
// certificate made for the test, and a plain HTTP one.
const secureHeaders = {
  'Strict-Transport-Security': 'max-age=63072000',
  'Content-Security-Policy': "default-src 'self'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};
let httpsUrl: string;
let httpUrl: string;
const servers: Array<{ close(cb: () => void): void }> = [];

beforeAll(async () => {
  const pems = selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    days: 30,
    keySize: 2048,
    algorithm: 'sha256',
  });
  const tls = createHttpsServer({ key: pems.private, cert: pems.cert, minVersion: 'TLSv1.3' }, (_req, res) =>
    res.writeHead(200, { ...secureHeaders, 'Content-Type': 'text/html' }).end('<p>secure</p>'),
  );
  tls.listen(0, '127.0.0.1');
  await once(tls, 'listening');
  httpsUrl = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/`;
  const plain = createHttpServer((_req, res) =>
    res.writeHead(200, { 'X-Frame-Options': 'SAMEORIGIN', 'Content-Type': 'text/html' }).end('<p>plain</p>'),
  );
  plain.listen(0, '127.0.0.1');
  await once(plain, 'listening');
  httpUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}/`;
  servers.push(tls, plain);
});
afterAll(async () => {
  for (const server of servers) await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('security probe', () => {
  it('reads TLS protocol, certificate days left and validity, and the graded headers', async () => {
    const facts = await probeSecurity(httpsUrl, { guard: createTargetGuard({ allow: parseAllowList('127.0.0.1') }) });
    expect(facts).toEqual({
      https: true,
      tlsProtocol: 'TLSv1.3',
      certDaysLeft: expect.any(Number),
      // Self-made: the chain does not verify, and that is reported rather than fatal.
      certValid: false,
      headers: [
        'strict-transport-security',
        'content-security-policy',
        'x-frame-options',
        'x-content-type-options',
        'referrer-policy',
      ],
    });
    expect(facts.certDaysLeft).toBeGreaterThanOrEqual(28);
    expect(facts.certDaysLeft).toBeLessThanOrEqual(30);
  });

  it('reports plain http as such', async () => {
    expect(await probeSecurity(httpUrl)).toEqual({
      https: false,
      tlsProtocol: null,
      certDaysLeft: null,
      certValid: null,
      headers: ['x-frame-options'],
    });
  });

  it('goes nowhere the target guard refuses', async () => {
    await expect(probeSecurity(httpUrl, { guard: createTargetGuard() })).rejects.toThrow(/not a public address/);
  });
});
