import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { LighthouseResult } from '@perfwatch/common';
import { compactScreenshots, MAX_PICTURE_BYTES } from './screenshot-compactor.ts';

/** A page-like JPEG: a header bar, text-like stripes, and some noise, as Lighthouse's screenshots are. */
async function pageJpeg(width: number, height: number, noise = 0.005): Promise<string> {
  const pixels = Buffer.alloc(width * height * 3, 255);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const header = y < height / 10;
      const text = !header && y % 24 < 10 && x > 20 && x < width - 20 && (x >> 3) % 5 !== 0;
      const value = header ? 40 : text ? 60 : 250;
      const jitter = Math.random() < noise ? Math.floor(Math.random() * 255) : value;
      pixels[i] = jitter;
      pixels[i + 1] = header ? 100 : jitter;
      pixels[i + 2] = header ? 200 : jitter;
    }
  }
  const jpeg = await sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 92 })
    .toBuffer();
  return `data:image/jpeg;base64,${jpeg.toString('base64')}`;
}

function lhrWith(final: string, frames: string[]): LighthouseResult {
  return {
    lighthouseVersion: '13.5.0',
    finalDisplayedUrl: 'https://shop.example/',
    categories: {},
    audits: {
      'final-screenshot': {
        id: 'final-screenshot',
        details: { type: 'screenshot', timing: 1200, timestamp: 1, data: final },
      },
      'screenshot-thumbnails': {
        id: 'screenshot-thumbnails',
        details: {
          type: 'filmstrip',
          scale: 3000,
          items: frames.map((data, i) => ({ timing: i * 300, timestamp: i, data })),
        },
      },
    },
  } as unknown as LighthouseResult;
}

const bytesOf = (dataUrl: string) => Buffer.from(dataUrl.split(',')[1]!, 'base64').length;

describe('compactScreenshots', () => {
  it('keeps the final screenshot and every filmstrip frame as WebP within 30 kB, the final one 360 px wide', async () => {
    const final = await pageJpeg(412, 823);
    const frames = await Promise.all(Array.from({ length: 8 }, () => pageJpeg(120, 240)));
    const compacted = await compactScreenshots(lhrWith(final, frames));
    const finalData = (compacted.audits['final-screenshot']!.details as { data: string; timing: number }).data;
    expect(finalData).toMatch(/^data:image\/webp;base64,/);
    expect(bytesOf(finalData)).toBeLessThanOrEqual(MAX_PICTURE_BYTES);
    expect(bytesOf(finalData)).toBeLessThan(bytesOf(final));
    const meta = await sharp(Buffer.from(finalData.split(',')[1]!, 'base64')).metadata();
    expect([meta.format, meta.width]).toEqual(['webp', 360]);
    expect((compacted.audits['final-screenshot']!.details as { timing: number }).timing).toBe(1200);
    const items = (
      compacted.audits['screenshot-thumbnails']!.details as { items: Array<{ data: string; timing: number }> }
    ).items;
    expect(items.map((item) => item.timing)).toEqual([0, 300, 600, 900, 1200, 1500, 1800, 2100]);
    for (const item of items) {
      expect(item.data).toMatch(/^data:image\/webp;base64,/);
      expect(bytesOf(item.data)).toBeLessThanOrEqual(MAX_PICTURE_BYTES);
    }
  });

  it('drops a picture it cannot fit or read rather than storing it big', async () => {
    // Pure noise at 2000 px does not fit 2 kB at any quality tried.
    const noisy = await pageJpeg(2000, 2000, 1);
    const compacted = await compactScreenshots(lhrWith(noisy, ['data:image/jpeg;base64,bm90IGFuIGltYWdl']), 2_000);
    expect(compacted.audits['final-screenshot']!.details).toBeUndefined();
    expect(compacted.audits['screenshot-thumbnails']!.details).toBeUndefined();
    // The rest of the result is untouched.
    expect(compacted.finalDisplayedUrl).toBe('https://shop.example/');
  });
});
