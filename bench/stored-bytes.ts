/**
 * What one stored run weighs: the stock `lighthouse` CLI's JSON (what Lighthouse CI keeps per
 * run), perfwatch's stored result before screenshots were kept (trimmed, no pictures) and now
 * (trimmed, the final screenshot and the filmstrip re-encoded small), each as stored: gzip of
 * the JSON. Real Lighthouse on the fixture pages, mobile and desktop.
 *   BENCH_ONLY=stored-bytes npm run bench
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { constants, gunzipSync, gzipSync, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { chromeFlags, compactScreenshots } from '@perfwatch/agent';
import { trimLighthouseResult, type LighthouseResult } from '@perfwatch/common';
import { startDemoSite } from '@perfwatch/local';
import { root } from './local-stack.ts';

const exec = promisify(execFile);

export interface StoredBytes {
  page: string;
  device: 'mobile' | 'desktop';
  /** The CLI's whole JSON, raw and gzipped. */
  lighthouseJson: number;
  lighthouseGzip: number;
  /** perfwatch's stored result (gzip of the JSON) without pictures, and with the small ones. */
  withoutPictures: number;
  withPictures: number;
  /** Bytes of the pictures themselves (decoded). */
  pictures: number;
  /** The stored result's JSON under zstd (Node's zlib, level 3 and 19), and the time to compress and to inflate it, against gzip's. */
  codecs: Array<{ name: string; bytes: number; compressMs: number; inflateMs: number }>;
}

/** Median time of `f` over `n` calls. */
function timed(n: number, f: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    f();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(n / 2)]!;
}

/** gzip (what is stored: level 6, Node's default) beside zstd at its default level and at a high one. */
function codecs(json: Buffer): StoredBytes['codecs'] {
  const zstd = (level: number) => (b: Buffer) =>
    zstdCompressSync(b, { params: { [constants.ZSTD_c_compressionLevel]: level } });
  const kinds = [
    { name: 'gzip 6 (stored)', compress: (b: Buffer) => gzipSync(b), inflate: (b: Buffer) => gunzipSync(b) },
    { name: 'gzip 9', compress: (b: Buffer) => gzipSync(b, { level: 9 }), inflate: (b: Buffer) => gunzipSync(b) },
    { name: 'zstd 3', compress: zstd(3), inflate: (b: Buffer) => zstdDecompressSync(b) },
    { name: 'zstd 19', compress: zstd(19), inflate: (b: Buffer) => zstdDecompressSync(b) },
  ];
  return kinds.map(({ name, compress, inflate }) => {
    const packed = compress(json);
    return {
      name,
      bytes: packed.length,
      compressMs: timed(15, () => compress(json)),
      inflateMs: timed(15, () => inflate(packed)),
    };
  });
}

const pictureBytes = (lhr: LighthouseResult): number => {
  const audits = lhr.audits as unknown as Record<
    string,
    { details?: { data?: string; items?: Array<{ data: string }> } }
  >;
  const urls = [
    audits['final-screenshot']?.details?.data,
    ...(audits['screenshot-thumbnails']?.details?.items ?? []).map((i) => i.data),
  ].filter((u): u is string => typeof u === 'string');
  return urls.reduce((n, u) => n + Buffer.from(u.split(',')[1] ?? '', 'base64').length, 0);
};

export async function measureStoredBytes(): Promise<StoredBytes[]> {
  const site = await startDemoSite();
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-bytes-'));
  const flags = chromeFlags({ noSandbox: process.getuid?.() === 0 });
  const figures: StoredBytes[] = [];
  try {
    for (const page of ['index.html', 'heavy.html']) {
      for (const device of ['mobile', 'desktop'] as const) {
        const output = join(dir, `${device}.json`);
        await exec(
          join(root, 'node_modules/.bin/lighthouse'),
          [
            `${site.url}${page}`,
            '--quiet',
            '--output=json',
            `--output-path=${output}`,
            `--chrome-flags=${flags.join(' ')}`,
            ...(device === 'desktop' ? ['--preset=desktop'] : []),
          ],
          {
            env: { ...process.env, CHROME_PATH: process.env['CHROME_PATH'] ?? '/usr/bin/chromium' },
            maxBuffer: 64 * 1024 * 1024,
          },
        );
        const text = await readFile(output, 'utf8');
        const lhr = JSON.parse(text) as LighthouseResult;
        const stored = (result: LighthouseResult) => gzipSync(JSON.stringify(result)).length;
        const small = await compactScreenshots(trimLighthouseResult(lhr, { keepScreenshots: true }));
        figures.push({
          page,
          device,
          lighthouseJson: Buffer.byteLength(text),
          lighthouseGzip: gzipSync(text).length,
          withoutPictures: stored(trimLighthouseResult(lhr)),
          withPictures: stored(small),
          pictures: pictureBytes(small),
          codecs: codecs(Buffer.from(JSON.stringify(small))),
        });
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
    await site.close();
  }
  return figures;
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} kB`;

export function storedBytesSection(figures: StoredBytes[]): string[] {
  return [
    '## Stored bytes per run (real Lighthouse 13 on the fixture pages; stored = gzip of the JSON, as both stores keep it)',
    '',
    '| page | device | Lighthouse JSON (what Lighthouse CI keeps) | its gzip | perfwatch before (no pictures) | perfwatch now (small pictures) | of which pictures | now ÷ Lighthouse JSON | goal ≤ 150 kB |',
    '|---|---|---|---|---|---|---|---|---|',
    ...figures.map(
      (f) =>
        `| ${f.page} | ${f.device} | ${kb(f.lighthouseJson)} | ${kb(f.lighthouseGzip)} | ${kb(f.withoutPictures)} | ${kb(f.withPictures)} | ${kb(f.pictures)} | ${(f.withPictures / f.lighthouseJson).toFixed(3)} | ${f.withPictures <= 150 * 1024 ? 'met' : '**not met**'} |`,
    ),
    '',
    'Pictures: the final screenshot as WebP 360 px wide and each filmstrip frame 120 px wide, every one at most 30 kB (agent/src/screenshot-compactor.ts); the full-page screenshot is never kept. WebP does not shrink further under gzip, so the pictures count whole.',
    '',
    "### The stored result under gzip and zstd (Node's zlib; median of 15, one thread)",
    '',
    `| page | device | ${figures[0]!.codecs.map((c) => c.name).join(' | ')} |`,
    `|---|---|${figures[0]!.codecs.map(() => '---').join('|')}|`,
    ...figures.map(
      (f) =>
        `| ${f.page} | ${f.device} | ${f.codecs.map((c) => `${kb(c.bytes)}; ${c.compressMs.toFixed(2)} ms in, ${c.inflateMs.toFixed(2)} ms out`).join(' | ')} |`,
    ),
    '',
  ];
}
