import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCruxHistoryClient } from './crux/crux-history.ts';
import { backfillFieldHistory } from './field-history.ts';
import { SqliteStore } from '../store/sqlite-store.ts';
import { kpiRows } from '../../../test/support/kpi-rows.ts';

// The back-fill against the embedded store and a local server answering the History API's
// shape from test/fixtures/crux/history-record.json (25 weekly periods, INP missing in the first
// three as "NaN", as the API marks periods without enough data).
const fixture = readFileSync(join(import.meta.dirname, '../../../test/fixtures/crux/history-record.json'), 'utf8');
const asked: Array<Record<string, unknown>> = [];
let failing = true;
let server: Server;
let endpoint: string;
let store: SqliteStore;

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      asked.push({ path: req.url!.split('?')[0], ...body });
      if (String(body['url'] ?? body['origin']).includes('flaky') && failing) res.writeHead(400).end('{}');
      else if (String(body['url'] ?? body['origin']).includes('unknown')) res.writeHead(404).end('{}');
      else res.setHeader('Content-Type', 'application/json').end(fixture);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
});
afterAll(async () => {
  await store.close();
  await new Promise((resolve) => server.close(resolve));
});

const rowsOf = async (userId: string) => {
  const rows = [];
  for (const row of await kpiRows(store, { userId, from: new Date(0), to: new Date('2100-01-01') })) rows.push(row);
  return rows;
};

describe('field-data history back-fill', () => {
  it("stores each project's 25 weeks of p75 per device, for page and origin, once", async () => {
    const user = await store.createUser('history');
    const project = await store.addProject({
      userId: user.id,
      url: 'https://shop.example/cart',
      domain: 'shop.example',
      locations: ['tokyo'],
      defaultLocation: 'tokyo',
      runs: 1,
      schedule: null,
    });
    const history = createCruxHistoryClient({ endpoint, apiKey: 'k', retries: 0 });
    expect(await backfillFieldHistory({ store, history, logger: pino({ level: 'silent' }) })).toBe(1);
    expect(
      asked
        .filter((a) => a['url'] === project.url)
        .map((a) => [a['path'], a['formFactor']])
        .sort(),
    ).toEqual([
      ['/v1/records:queryHistoryRecord', 'DESKTOP'],
      ['/v1/records:queryHistoryRecord', 'PHONE'],
    ]);
    expect(asked.filter((a) => a['origin'] === 'https://shop.example')).toHaveLength(2);

    const rows = await rowsOf(user.id);
    // 25 weeks × 2 devices × 10 records (5 metrics × page and origin).
    expect(rows).toHaveLength(25 * 2 * 10);
    expect(new Set(rows.map((r) => `${r.section} ${r.location} ${r.updateType} ${r.url}`))).toEqual(
      new Set([`CRUX tokyo scheduled ${project.url}`]),
    );
    const lcp = rows.filter((r) => r.kpi === 'url_lcp_p75' && r.device === 'mobile');
    expect(lcp.map((r) => r.data)).toEqual(Array.from({ length: 25 }, (_, k) => String(2900 - k * 30)));
    expect(lcp.at(-1)!.date).toEqual(new Date(Date.UTC(2026, 10, 15)));
    // Periods without enough data are said so, not invented.
    expect(
      rows
        .filter((r) => r.kpi === 'url_inp_p75' && r.device === 'mobile')
        .slice(0, 4)
        .map((r) => r.data),
    ).toEqual(['NO_DATA', 'NO_DATA', 'NO_DATA', '204']);
    expect(rows.find((r) => r.kpi === 'origin_cls_p75')!.data).toBe('0.12');

    // Done once: a second pass asks nothing.
    const before = asked.length;
    expect(await backfillFieldHistory({ store, history, logger: pino({ level: 'silent' }) })).toBe(0);
    expect(asked.length).toBe(before);
    // The history is no orphan of a snapshot: the sweep keeps it.
    await store.deleteOrphans(new Date());
    expect(await rowsOf(user.id)).toHaveLength(500);
  });

  it('stores none for a page CrUX does not know, and tries again a project it could not ask for', async () => {
    const user = await store.createUser('history-2');
    await store.addProject({
      userId: user.id,
      url: 'https://unknown.example/',
      domain: 'unknown.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    await store.addProject({
      userId: user.id,
      url: 'https://flaky.example/',
      domain: 'flaky.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const history = createCruxHistoryClient({ endpoint, apiKey: 'k', retries: 0 });
    expect(await backfillFieldHistory({ store, history, logger: pino({ level: 'silent' }) })).toBe(1);
    expect(await rowsOf(user.id)).toEqual([]);
    failing = false;
    expect(await backfillFieldHistory({ store, history, logger: pino({ level: 'silent' }) })).toBe(1);
    expect((await rowsOf(user.id)).filter((r) => r.url === 'https://flaky.example/')).toHaveLength(500);
  });
});
