import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCruxClient } from './crux-client.ts';

// A local server speaking the CrUX API's records:queryRecord protocol with recorded answers.
const recorded = (key: Record<string, string>) => ({
  record: {
    key,
    metrics: {
      largest_contentful_paint: {
        histogram: [
          { start: 0, end: 2500, density: 0.81 },
          { start: 2500, end: 4000, density: 0.12 },
          { start: 4000, density: 0.07 },
        ],
        percentiles: { p75: 2140 },
      },
      interaction_to_next_paint: {
        histogram: [
          { start: 0, end: 200, density: 0.86 },
          { start: 200, end: 500, density: 0.1 },
          { start: 500, density: 0.04 },
        ],
        percentiles: { p75: 163 },
      },
      cumulative_layout_shift: {
        histogram: [
          { start: '0.00', end: '0.10', density: 0.9 },
          { start: '0.10', end: '0.25', density: 0.06 },
          { start: '0.25', density: 0.04 },
        ],
        percentiles: { p75: '0.04' },
      },
    },
    collectionPeriod: { firstDate: { year: 2026, month: 10, day: 24 }, lastDate: { year: 2026, month: 11, day: 20 } },
  },
});

let server: Server;
let endpoint: string;
const requests: Array<{ key: string | null; body: Record<string, string> }> = [];
let throttleNext = 0;

async function body(req: IncomingMessage): Promise<Record<string, string>> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return JSON.parse(text);
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const b = await body(req);
    requests.push({ key: url.searchParams.get('key'), body: b });
    res.setHeader('Content-Type', 'application/json');
    if (url.pathname !== '/v1/records:queryRecord' || req.method !== 'POST') return void res.writeHead(400).end('{}');
    if (throttleNext > 0) {
      throttleNext--;
      return void res
        .writeHead(429)
        .end(JSON.stringify({ error: { code: 429, message: 'Quota exceeded', status: 'RESOURCE_EXHAUSTED' } }));
    }
    if ((b['url'] ?? b['origin'] ?? '').includes('unknown')) {
      return void res
        .writeHead(404)
        .end(JSON.stringify({ error: { code: 404, message: 'chrome ux report data not found', status: 'NOT_FOUND' } }));
    }
    res.end(
      JSON.stringify(
        recorded({ formFactor: b['formFactor']!, ...(b['url'] ? { url: b['url'] } : { origin: b['origin']! }) }),
      ),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const logger = pino({ level: 'silent' });

describe('CrUX client', () => {
  it("asks for the page and its origin with the device's form factor and the key", async () => {
    const client = createCruxClient({ endpoint, apiKey: 'k-123', logger });
    requests.length = 0;
    const data = await client.fieldData('https://shop.example/cart?x=1', 'desktop');
    expect(data!.url!.key).toEqual({ formFactor: 'DESKTOP', url: 'https://shop.example/cart?x=1' });
    expect(data!.origin!.key).toEqual({ formFactor: 'DESKTOP', origin: 'https://shop.example' });
    expect(data!.url!.metrics['largest_contentful_paint']!.percentiles!.p75).toBe(2140);
    expect(requests.map((r) => r.key)).toEqual(['k-123', 'k-123']);
  });

  it('reads a 404 as no data', async () => {
    const client = createCruxClient({ endpoint, apiKey: 'k', logger });
    const data = await client.fieldData('https://unknown.example/', 'mobile');
    expect(data).toEqual({ url: null, origin: null });
  });

  it('retries a 429 with backoff, then answers', async () => {
    const client = createCruxClient({ endpoint, apiKey: 'k', logger, minRetryMs: 10 });
    requests.length = 0;
    throttleNext = 2;
    const data = await client.fieldData('https://retry.example/', 'mobile');
    expect(data!.url).not.toBeNull();
    expect(requests.length).toBe(4);
  });

  it('gives up after its retries without claiming anything, and does not cache the failure', async () => {
    const client = createCruxClient({ endpoint, apiKey: 'k', logger, retries: 1, minRetryMs: 10 });
    throttleNext = 10;
    expect(await client.fieldData('https://busy.example/', 'mobile')).toBeNull();
    throttleNext = 0;
    expect((await client.fieldData('https://busy.example/', 'mobile'))!.url).not.toBeNull();
  });

  it('caches answers for the UTC day', async () => {
    let today = new Date('2026-11-22T10:00:00Z');
    const client = createCruxClient({ endpoint, apiKey: 'k', logger, now: () => today });
    requests.length = 0;
    await client.fieldData('https://cached.example/', 'mobile');
    await client.fieldData('https://cached.example/', 'mobile');
    expect(requests).toHaveLength(2);
    await client.fieldData('https://cached.example/', 'desktop');
    expect(requests).toHaveLength(4);
    today = new Date('2026-11-23T00:00:01Z');
    await client.fieldData('https://cached.example/', 'mobile');
    expect(requests).toHaveLength(6);
  });
});
