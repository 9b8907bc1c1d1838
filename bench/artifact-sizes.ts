/**
 * What one run's artifacts weigh: the requests (NDJSON of Lighthouse's `network-requests`) and
 * the DevTools trace, gzip as the agent keeps, sends and the store keeps them, and raw, against
 * their bounds (ARTIFACT_MAX_BYTES). Real Lighthouse through the agent's own runner (so the
 * capture is the shipped one, agent/src/artifact-capture.ts) on the fixture pages, mobile and
 * desktop, and on a page of 5,000 requests; then synthetic worst cases past each bound (5,000
 * requests with long incompressible URLs, an incompressible trace) to show where the cut falls.
 *   BENCH_ONLY=artifacts npm run bench   (node bench/artifact-sizes.ts)
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import { chromeFlags, createLighthouseRunner, startGuardProxy } from '@perfwatch/agent';
import { ARTIFACT_MAX_BYTES, createTargetGuard, parseAllowList, type Device } from '@perfwatch/common';
import { startDemoSite } from '@perfwatch/local';
import { captureRequests, captureTrace } from '../agent/src/artifact-capture.ts';
import type { GzippedArtifact } from '../agent/src/artifact-gzip.ts';

/** One artifact as kept: its pieces (requests, or trace events) kept of all, gzip and raw bytes, cut or not. */
interface ArtifactSize {
  pieces: number;
  total: number;
  gzip: number;
  raw: number;
  truncated: boolean;
}

interface RunSizes {
  page: string;
  device: Device | 'synthetic';
  requests: ArtifactSize | null;
  trace: ArtifactSize | null;
}

export interface ArtifactSizeFigures {
  runs: RunSizes[];
  loadAvg: [number, number];
}

/** Requests of the synthetic runs: the issue's example of a page that must not make a 100 MB artifact. */
const MANY_REQUESTS = 5000;
/**
 * Images of the real page of many requests. Lighthouse takes about a minute over a thousand on
 * this 2-core machine (loaded), and did not finish 5,000 within ten minutes: the synthetic runs
 * stand for those.
 */
const PAGE_IMAGES = 1000;

/** `header` pieces that are not requests or events (the trace's opening text). */
const sizeOf = (artifact: GzippedArtifact | undefined | null, header = 0): ArtifactSize | null =>
  artifact
    ? {
        pieces: artifact.pieces - header,
        total: artifact.total - header,
        gzip: artifact.gzip.byteLength,
        raw: gunzipSync(artifact.gzip).byteLength,
        truncated: artifact.truncated,
      }
    : null;

/** A page that loads PAGE_IMAGES small images, each at an address of its own. */
async function startManyRequestsPage(): Promise<{ url: string; server: Server }> {
  const images = Array.from({ length: PAGE_IMAGES }, (_, i) => `<img src="/img/${i}.svg" width="2" height="2">`);
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${PAGE_IMAGES} requests</title></head><body>${images.join('')}</body></html>`;
  const dot = '<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"><rect width="2" height="2"/></svg>';
  const server = createServer((req, res) => {
    const svg = req.url?.startsWith('/img/');
    res.writeHead(svg ? 200 : req.url === '/' ? 200 : 404, {
      'content-type': svg ? 'image/svg+xml' : 'text/html',
      'cache-control': 'max-age=3600',
    });
    res.end(svg ? dot : req.url === '/' ? page : '');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

/** Real Lighthouse runs through the agent's runner (target guard and proxy as shipped), each run's capture measured. */
async function measureRealRuns(): Promise<RunSizes[]> {
  const logger = pino({ level: 'warn' });
  const guard = createTargetGuard({ allow: parseAllowList('127.0.0.1/32') });
  const proxy = await startGuardProxy({ guard, logger });
  const runner = createLighthouseRunner({
    chromePath: process.env['CHROME_PATH'] ?? '/usr/bin/chromium',
    chromeFlags: chromeFlags({ noSandbox: process.getuid?.() === 0 }),
    logger,
    runsPerBrowser: 1,
    guard: { guard, proxy },
  });
  const site = await startDemoSite();
  const many = await startManyRequestsPage();
  const pages = [
    ...['index.html', 'heavy.html', 'huge.html', 'slow.html'].flatMap((page) =>
      (['mobile', 'desktop'] as const).map((device) => ({ page, url: `${site.url}${page}`, device })),
    ),
    {
      page: `${PAGE_IMAGES.toLocaleString('en')} images at addresses of their own`,
      url: many.url,
      device: 'mobile' as const,
    },
  ];
  const runs: RunSizes[] = [];
  try {
    for (const { page, url, device } of pages) {
      const { artifacts } = await runner.run({ url, device, timeoutMs: 300_000 });
      const run = { page, device, requests: sizeOf(artifacts?.requests), trace: sizeOf(artifacts?.trace, 1) };
      process.stdout.write(`artifact sizes: ${JSON.stringify(run)}\n`);
      runs.push(run);
    }
  } finally {
    await runner.close();
    await proxy.close();
    await site.close();
    many.server.close();
  }
  return runs;
}

/** One of Lighthouse's `network-requests` items, its URL given. */
const requestItem = (url: string, i: number, entity: string) => ({
  url,
  protocol: 'h2',
  rendererStartTime: 100 + i * 0.7,
  networkRequestTime: 101 + i * 0.7,
  networkEndTime: 140 + i * 0.9,
  transferSize: 1200 + ((i * 7919) % 30_000),
  resourceSize: 2400 + ((i * 104_729) % 90_000),
  statusCode: 200,
  mimeType: 'image/webp',
  resourceType: 'Image',
  priority: 'Low',
  entity,
  experimentalFromMainFrame: true,
});

/** A Lighthouse result whose `network-requests` lists `items`: what the capture reads of a run. */
const lhrOf = (items: unknown[]) => ({ audits: { 'network-requests': { details: { type: 'table', items } } } });

/**
 * Synthetic runs: 5,000 requests of an ordinary shape (a shop's images on a CDN, about 100
 * characters of URL each), then past each bound on purpose, to show where the cut falls.
 */
async function measureSynthetic(): Promise<RunSizes[]> {
  const typical = Array.from({ length: MANY_REQUESTS }, (_, i) =>
    requestItem(
      `https://cdn${i % 4}.shop.example/assets/products/${i}/${randomBytes(6).toString('hex')}-480w.webp?v=${randomBytes(4).toString('hex')}`,
      i,
      'shop.example',
    ),
  );
  // Each URL as long as the capture keeps (2,048 characters) and incompressible.
  const worst = Array.from({ length: MANY_REQUESTS }, (_, i) =>
    requestItem(`https://cdn${i % 40}.example/${randomBytes(1530).toString('base64url')}`.slice(0, 2048), i, 'x'),
  );
  // Events of 2 kB of incompressible arguments: 40,000 of them are 80 MB of JSON.
  const traceEvents = Array.from({ length: 40_000 }, (_, i) => ({
    name: 'EventDispatch',
    ph: 'X',
    ts: i * 10,
    dur: 5,
    pid: 1,
    tid: 1,
    args: { data: randomBytes(1500).toString('base64') },
  }));
  const run = (page: string, sizes: Pick<RunSizes, 'requests' | 'trace'>): RunSizes => ({
    page,
    device: 'synthetic',
    ...sizes,
  });
  return [
    run("5,000 requests, URLs of about 100 characters (a CDN's images)", {
      requests: sizeOf(await captureRequests(lhrOf(typical))),
      trace: null,
    }),
    run('5,000 requests, each URL 2,048 random characters (past the bound)', {
      requests: sizeOf(await captureRequests(lhrOf(worst))),
      trace: null,
    }),
    run('40,000 trace events of 2 kB of random data (past the bound)', {
      requests: null,
      trace: sizeOf(await captureTrace({ traceEvents }), 1),
    }),
  ];
}

export async function measureArtifactSizes(): Promise<ArtifactSizeFigures> {
  const load = loadavg()[0]!;
  const runs = [...(await measureRealRuns()), ...(await measureSynthetic())];
  return { runs, loadAvg: [load, loadavg()[0]!] };
}

const kb = (bytes: number) => `${(bytes / 1024).toLocaleString('en', { maximumFractionDigits: 0 })} kB`;
const cell = (size: ArtifactSize | null, bound: number, what: string) =>
  size
    ? [
        `${size.pieces.toLocaleString('en')}${size.truncated ? ` of ${size.total.toLocaleString('en')} ${what} (**cut**)` : ` ${what}`}`,
        kb(size.raw),
        kb(size.gzip),
        (size.gzip / bound).toFixed(3),
      ]
    : ['—', '—', '—', '—'];

/** What the bounds are and what they hold to, said once above the figures. */
export function artifactBoundsNote(): string[] {
  return [
    `The bounds (ARTIFACT_MAX_BYTES in common/src/artifact-messages.ts) are gzip bytes of one artifact of one run, as the agent keeps it, sends it and the store keeps it: requests ${kb(ARTIFACT_MAX_BYTES.requests)}, trace ${kb(ARTIFACT_MAX_BYTES.trace)}. The agent's capture (agent/src/artifact-capture.ts, agent/src/artifact-gzip.ts) never passes them: it gzips in batches of 256 KiB of text, flushed so the bytes so far are exact, and takes a batch in only if even its worst case (deflate's stored blocks, 1 % over the text) still fits beside the closing line; what does not fit is left out, and the artifact still parses and says it was cut (the requests' last line \`{"end":true,"requests":N,"written":M,"truncated":true}\`, the trace's \`metadata.perfwatchTruncated\`). Requests and events are kept in Lighthouse's order, so a cut artifact keeps the page's start. Each request line holds only what a waterfall needs, its URL cut at 2,048 characters and other texts at 200. Past the agent, the receiver refuses a transfer announced or sent past the bound and the store refuses a body past it (nothing kept). So a cell's representative run costs at most 22 MiB of artifacts, a snapshot of 12 cells at most 264 MiB; the real pages below are a small part of that.`,
    '',
  ];
}

export function artifactSizesSection(f: ArtifactSizeFigures): string[] {
  return [
    `### Artifact bytes per run (real Lighthouse through the agent's runner; bounds: requests ${kb(ARTIFACT_MAX_BYTES.requests)}, trace ${kb(ARTIFACT_MAX_BYTES.trace)} of gzip)`,
    '',
    '| page | device | requests kept | requests NDJSON raw | gzip (kept, sent, stored) | ÷ bound | trace events kept | trace JSON raw | gzip (kept, sent, stored) | ÷ bound |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...f.runs.map((r) =>
      [
        '',
        r.page,
        r.device,
        ...cell(r.requests, ARTIFACT_MAX_BYTES.requests, 'requests'),
        ...cell(r.trace, ARTIFACT_MAX_BYTES.trace, 'events'),
        '',
      ]
        .join(' | ')
        .trim(),
    ),
    '',
    `Machine load (1-minute average) ${f.loadAvg[0].toFixed(1)} at the start, ${f.loadAvg[1].toFixed(1)} at the end.`,
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measureArtifactSizes();
  process.stdout.write(`${artifactSizesSection(figures).join('\n')}\n`);
}
