import type { Response } from 'express';

/** Resolves when the client has read what was written, or the connection closed; false after `ms`. */
function drainedOrClosed(res: Response, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (drained: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onDrain);
      resolve(drained);
    };
    const onDrain = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    res.on('drain', onDrain);
    res.on('close', onDrain);
  });
}

/**
 * Writes `text` and waits while the socket's buffer is full: false when the client stopped
 * reading for `stallMs` (the caller cuts it off) or is gone.
 */
async function written(res: Response, text: string, stallMs: number): Promise<boolean> {
  if (res.write(text)) return true;
  return (await drainedOrClosed(res, stallMs)) && !res.destroyed;
}

/** Text gathered before a write: few syscalls, and little memory per answer (a thousand sync answers may be written at once). */
const GATHER_CHARS = 64 * 1024;

/** How an answer written in pieces ended: whole, cut off for a client that stopped reading, a client gone, or a piece that failed. */
export type PiecesEnd = { end: 'written' | 'stalled' | 'gone' } | { end: 'failed'; error: unknown };

/**
 * Writes a JSON answer piece by piece as `pieces` yields them, gathered up to GATHER_CHARS,
 * waiting while the client reads; an answer that fits is one write with its length. Past the
 * first byte a failure cannot become an envelope: the connection is cut, so no client takes a
 * truncated answer for a whole one; so is a client that reads nothing for `stallMs`. Stopping
 * early returns `pieces`, so whatever it reads from is released.
 */
export async function writeJsonPieces(res: Response, pieces: AsyncIterable<string>, stallMs: number): Promise<PiecesEnd> {
  res.type('application/json');
  let gathered: string[] = [];
  let chars = 0;
  try {
    for await (const piece of pieces) {
      gathered.push(piece);
      chars += piece.length;
      if (chars < GATHER_CHARS) continue;
      if (!(await written(res, gathered.join(''), stallMs))) {
        const gone = res.destroyed;
        res.destroy();
        return { end: gone ? 'gone' : 'stalled' };
      }
      gathered = [];
      chars = 0;
    }
    res.end(gathered.join(''));
    return { end: 'written' };
  } catch (error) {
    res.destroy(error as Error);
    return { end: 'failed', error };
  }
}
