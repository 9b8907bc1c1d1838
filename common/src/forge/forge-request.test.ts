import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { boundedText, forgeRequest } from './forge-request.ts';

/** A body that streams `chunks` pieces of 64 kB, counting how many were pulled. */
function streamed(chunks: number) {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === chunks) return controller.close();
      pulled += 1;
      controller.enqueue(new Uint8Array(64 * 1024).fill(0x61));
    },
  });
  return { response: new Response(body), pulled: () => pulled };
}

describe("a forge's answers are read within a bound", () => {
  it('reads a body up to the bound, and stops pulling a longer one past it', async () => {
    expect(await boundedText(new Response('{"ok":1}'), 100)).toBe('{"ok":1}');
    const endless = streamed(10_000);
    expect(await boundedText(endless.response, 256 * 1024)).toBeNull();
    expect(endless.pulled()).toBeLessThanOrEqual(6);
    const declared = new Response('x', { headers: { 'content-length': '999999999' } });
    expect(await boundedText(declared, 1024)).toBeNull();
  });

  it('an answer past 8 MiB is refused as such, not read into memory', async () => {
    const endless = streamed(1_000_000);
    const request = forgeRequest(async () => endless.response, {
      method: 'GET',
      url: 'https://forge.test/x',
      headers: {},
      what: 'comments of #1',
      answer: z.unknown(),
    });
    await expect(request).rejects.toMatchObject({ kind: 'rejected' });
    expect(endless.pulled()).toBeLessThan(200);
  });
});
