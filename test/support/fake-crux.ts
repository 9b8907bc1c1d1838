import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the CrUX API's `records:queryRecord`, answering with a recorded-style
 * record (LCP 2140 ms, INP 163 ms, CLS 0.04 at p75: a passing assessment) for every URL and
 * origin, and 404 for hosts containing "unknown".
 */
export async function startFakeCrux(): Promise<{
  endpoint: string;
  requests: Array<Record<string, string>>;
  close(): Promise<void>;
}> {
  const requests: Array<Record<string, string>> = [];
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text || '{}') as Record<string, string>;
    requests.push(body);
    res.setHeader('Content-Type', 'application/json');
    if (req.url?.startsWith('/v1/records:queryHistoryRecord')) {
      // 25 weekly periods in the History API's shape (test/fixtures/crux/history-record.json),
      // keyed to what was asked; 404 for hosts containing "unknown", as CrUX answers unknown pages.
      if ((body['url'] ?? body['origin'] ?? '').includes('unknown')) {
        res
          .writeHead(404)
          .end(
            JSON.stringify({ error: { code: 404, message: 'chrome ux report data not found', status: 'NOT_FOUND' } }),
          );
        return;
      }
      const history = JSON.parse(
        readFileSync(join(import.meta.dirname, '../fixtures/crux/history-record.json'), 'utf8'),
      ) as { record: { key: Record<string, string> } };
      history.record.key = {
        formFactor: body['formFactor'] ?? 'PHONE',
        ...(body['url'] ? { url: body['url'] } : { origin: body['origin'] ?? '' }),
      };
      res.end(JSON.stringify(history));
      return;
    }
    if ((body['url'] ?? body['origin'] ?? '').includes('unknown')) {
      res
        .writeHead(404)
        .end(JSON.stringify({ error: { code: 404, message: 'chrome ux report data not found', status: 'NOT_FOUND' } }));
      return;
    }
    res.end(
      JSON.stringify({
        record: {
          key: { formFactor: body['formFactor'], ...(body['url'] ? { url: body['url'] } : { origin: body['origin'] }) },
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
          collectionPeriod: {
            firstDate: { year: 2026, month: 10, day: 24 },
            lastDate: { year: 2026, month: 11, day: 20 },
          },
        },
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
