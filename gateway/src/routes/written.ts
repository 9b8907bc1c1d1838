import type { Response } from 'express';

/** Resolves when the client has read what was written, or the connection closed; false after `ms`. */
export function drainedOrClosed(res: Response, ms: number): Promise<boolean> {
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
export async function written(res: Response, text: string, stallMs: number): Promise<boolean> {
  if (res.write(text)) return true;
  return (await drainedOrClosed(res, stallMs)) && !res.destroyed;
}
