import sharp from 'sharp';
import type { LighthouseResult } from '@perfwatch/common';

/** Each stored picture at most this big: the final screenshot and every filmstrip frame. */
export const MAX_PICTURE_BYTES = 30 * 1024;
/** Wide enough to read a page's layout in the snapshot view; Lighthouse takes phone-sized ones anyway. */
const FINAL_WIDTH = 360;
/** A filmstrip frame shows how far the page has drawn, not its text: thumbnail-sized. */
const FRAME_WIDTH = 120;
/** WebP qualities tried in turn until the picture fits; past the last one it is dropped. */
const QUALITIES = [70, 55, 40, 25];

const DATA_URL = /^data:image\/[a-z+]+;base64,/;

/** A picture re-encoded as WebP within `maxBytes`, as a data URL; null when it cannot be made to fit or read. */
async function compact(dataUrl: unknown, width: number | undefined, maxBytes: number): Promise<string | null> {
  if (typeof dataUrl !== 'string' || !DATA_URL.test(dataUrl)) return null;
  const input = Buffer.from(dataUrl.replace(DATA_URL, ''), 'base64');
  try {
    for (const quality of QUALITIES) {
      const image = width ? sharp(input).resize({ width, withoutEnlargement: true }) : sharp(input);
      const webp = await image.webp({ quality, effort: 4 }).toBuffer();
      if (webp.length <= maxBytes) return `data:image/webp;base64,${webp.toString('base64')}`;
    }
  } catch {
    // A picture sharp cannot decode is not worth failing a run over.
  }
  return null;
}

interface Picture {
  data?: unknown;
  [key: string]: unknown;
}

/**
 * Keeps a run's final screenshot and filmstrip, small: each re-encoded as WebP (the final one
 * scaled to 360 px wide, filmstrip frames to 120 px) within MAX_PICTURE_BYTES, so the report and the snapshot view have their
 * pictures back at a fraction of Lighthouse's JPEGs. A picture that cannot be made to fit is left
 * out, never stored big. The full-page screenshot is not kept at all (trimLighthouseResult).
 */
export async function compactScreenshots(
  lhr: LighthouseResult,
  maxBytes = MAX_PICTURE_BYTES,
): Promise<LighthouseResult> {
  const audits = { ...lhr.audits };
  const final = audits['final-screenshot'];
  const finalDetails = final?.details as Picture | undefined;
  if (final && finalDetails) {
    const data = await compact(finalDetails.data, FINAL_WIDTH, maxBytes);
    audits['final-screenshot'] = { ...final, details: data ? { ...finalDetails, data } : undefined };
  }
  const filmstrip = audits['screenshot-thumbnails'];
  const filmstripDetails = filmstrip?.details as { items?: Picture[] } | undefined;
  if (filmstrip && filmstripDetails && Array.isArray(filmstripDetails.items)) {
    const items = await Promise.all(
      filmstripDetails.items.map(async (item) => ({ ...item, data: await compact(item.data, FRAME_WIDTH, maxBytes) })),
    );
    const kept = items.filter((item) => item.data !== null);
    audits['screenshot-thumbnails'] = {
      ...filmstrip,
      details: kept.length > 0 ? { ...filmstripDetails, items: kept } : undefined,
    };
  }
  return { ...lhr, audits };
}
