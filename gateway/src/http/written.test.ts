import { request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeJsonPieces, type PiecesEnd } from './written.ts';

/** An answer of text and byte pieces: a large one crosses many socket buffers. */
function pieces(count: number): Array<string | Uint8Array> {
  // Text with a character of two bytes: a length in characters would be short.
  const out: Array<string | Uint8Array> = ['{"name":"café","cells":['];
  for (let i = 0; i < count; i++)
    out.push(Buffer.from(JSON.stringify({ i, text: `é${'x'.repeat(50_000)}` })), i + 1 < count ? ',' : '');
  out.push(']}');
  return out;
}

const whole = (list: Array<string | Uint8Array>) =>
  Buffer.concat(list.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));

describe('writeJsonPieces', () => {
  const ends: PiecesEnd[] = [];
  let base = '';
  let close = () => {};

  beforeAll(async () => {
    const app = express();
    app.get('/answer/:count', async (req, res) => {
      const list = pieces(Number(req.params.count));
      ends.push(
        await writeJsonPieces(
          res,
          (async function* () {
            yield* list;
          })(),
          500,
        ),
      );
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => server.close();
  });
  afterAll(() => close());

  const get = (path: string) =>
    new Promise<IncomingMessage>((resolve, reject) => request(`${base}${path}`, resolve).on('error', reject).end());

  it('writes an answer of many megabytes whole to a client that reads slowly, waiting as it reads', async () => {
    const res = await get('/answer/80');
    const chunks: Buffer[] = [];
    for await (const chunk of res) {
      chunks.push(chunk as Buffer);
      // A pause now and then, shorter than the stall limit: the socket's buffer fills meanwhile.
      if (chunks.length % 20 === 0) await sleep(50);
    }
    expect(Buffer.concat(chunks).equals(whole(pieces(80)))).toBe(true);
    expect(JSON.parse(Buffer.concat(chunks).toString('utf8')).cells).toHaveLength(80);
    expect(ends.at(-1)).toEqual({ end: 'written' });
  });

  it('sends an answer that fits in one gathering with its length', async () => {
    const res = await get('/answer/0');
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    expect(res.headers['content-length']).toBe(String(whole(pieces(0)).byteLength));
    expect(JSON.parse(Buffer.concat(chunks).toString('utf8'))).toEqual({ name: 'café', cells: [] });
  });

  it('cuts off a client that stops reading, instead of holding its answer', async () => {
    const res = await get('/answer/400');
    res.pause();
    const closed = new Promise((resolve) => res.once('close', resolve));
    for (let i = 0; i < 40 && ends.length < 3; i++) await sleep(100);
    expect(ends.at(-1)).toEqual({ end: 'stalled' });
    res.resume();
    await closed;
    expect(res.complete).toBe(false);
  });
});
