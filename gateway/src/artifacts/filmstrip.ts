import { z } from 'zod';
import { forEachMember, skipSpace, valueEnd } from '../snapshots/result-audits.ts';

/** A frame of the filmstrip: when it was taken (ms since the navigation started) and the picture, a data: URL. */
export interface FilmstripFrame {
  timing: number;
  data: string;
}

const frameSchema = z.object({ timing: z.number().finite(), data: z.string() });

/** Only what the filmstrip needs of a result; a frame of another shape is left out, never the whole strip. */
const thumbnailsSchema = z.object({
  audits: z.object({
    'screenshot-thumbnails': z
      .object({ details: z.object({ items: z.array(z.unknown()) }) })
      .optional()
      .catch(undefined),
  }),
});

/**
 * The frames of a stored Lighthouse result's `screenshot-thumbnails` (kept small by the agent's
 * screenshot compactor), in the result's order; null when the result has none (Lighthouse took
 * none, or every picture was too large to keep).
 */
export function filmstripOf(lhr: unknown): FilmstripFrame[] | null {
  const parsed = thumbnailsSchema.safeParse(lhr);
  const items = parsed.success ? parsed.data.audits['screenshot-thumbnails']?.details.items : undefined;
  const frames = (items ?? []).flatMap((item) => {
    const frame = frameSchema.safeParse(item);
    return frame.success ? [frame.data] : [];
  });
  return frames.length > 0 ? frames : null;
}

const OPEN_BRACE = '{'.charCodeAt(0);

/**
 * The frames of a stored result, read off its JSON as auditsOfJson reads audits: only the
 * `screenshot-thumbnails` audit is parsed, the rest of the result (up to 16 MiB) stepped over.
 * Bytes that are no JSON object give none.
 */
export function filmstripOfJson(json: Uint8Array): FilmstripFrame[] | null {
  const text = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  let thumbnails: unknown;
  try {
    forEachMember(text, skipSpace(text, 0), (name, at) => {
      if (name !== 'audits' || text[at] !== OPEN_BRACE) return undefined;
      return forEachMember(text, at, (id, value) => {
        if (id !== 'screenshot-thumbnails') return undefined;
        const end = valueEnd(text, value);
        thumbnails = JSON.parse(text.toString('utf8', value, end));
        return end;
      });
    });
  } catch {
    return null;
  }
  return filmstripOf({ audits: { 'screenshot-thumbnails': thumbnails } });
}
