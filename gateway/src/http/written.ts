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
 * Writes `pieces` (Node corks the socket for the rest of the tick, so they leave together) and
 * waits while the socket's buffer is full: false when the client stopped reading for `stallMs`
 * (the caller cuts it off) or is gone. Not `res.cork()`: a response corked that way holds its
 * chunks back without ever announcing the drain its writes' `false` promises.
 */
async function written(res: Response, pieces: ReadonlyArray<string | Uint8Array>, stallMs: number): Promise<boolean> {
  let room = true;
  for (const piece of pieces) room = res.write(piece);
  if (room) return true;
  return (await drainedOrClosed(res, stallMs)) && !res.destroyed;
}

/**
 * Gathered before a write (a text piece counted by its characters, bytes by their length): few
 * syscalls, and little memory per answer (a thousand sync answers may be written at once). A
 * piece this large is written at once, and the socket has taken it before the next is asked
 * for (the audit route hands a result's memory back then).
 */
export const GATHER_SIZE = 64 * 1024;

/** How an answer written in pieces ended: whole, cut off for a client that stopped reading, a client gone, or a piece that failed. */
export type PiecesEnd = { end: 'written' | 'stalled' | 'gone' } | { end: 'failed'; error: unknown };

const sizeOf = (piece: string | Uint8Array) => (typeof piece === 'string' ? piece.length : piece.byteLength);
const byteLength = (piece: string | Uint8Array) =>
  typeof piece === 'string' ? Buffer.byteLength(piece) : piece.byteLength;

/**
 * Writes a JSON answer piece by piece as `pieces` yields them (text, or bytes already in
 * UTF-8, which are written as they are, never copied), gathered up to GATHER_SIZE, waiting
 * while the client reads; an answer that fits is one write with its length. Past the first
 * byte a failure cannot become an envelope: the connection is cut, so no client takes a
 * truncated answer for a whole one; so is a client that reads nothing for `stallMs`. Stopping
 * early returns `pieces`, so whatever it reads from is released.
 */
export async function writeJsonPieces(
  res: Response,
  pieces: AsyncIterable<string | Uint8Array>,
  stallMs: number,
): Promise<PiecesEnd> {
  res.type('application/json');
  let gathered: Array<string | Uint8Array> = [];
  let size = 0;
  try {
    for await (const piece of pieces) {
      gathered.push(piece);
      size += sizeOf(piece);
      if (size < GATHER_SIZE) continue;
      if (!(await written(res, gathered, stallMs))) {
        const gone = res.destroyed;
        res.destroy();
        return { end: gone ? 'gone' : 'stalled' };
      }
      gathered = [];
      size = 0;
    }
    if (!res.headersSent)
      res.setHeader(
        'Content-Length',
        gathered.reduce((sum, piece) => sum + byteLength(piece), 0),
      );
    for (const piece of gathered) res.write(piece);
    res.end();
    return { end: 'written' };
  } catch (error) {
    res.destroy(error as Error);
    return { end: 'failed', error };
  }
}
