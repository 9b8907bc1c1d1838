import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '@perfwatch/common';
import { DEFAULT_HEAVY_READS, heavyReadLimit, HEAVY_READ_RETRY_AFTER_S, whileConnected } from './heavy-reads.ts';

/** A read that runs until it is told to end. */
function pending() {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  return { read: () => ended, end };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('heavyReadLimit', () => {
  it('gives the 512 MiB gateway four places of 32 MiB', () => {
    expect(DEFAULT_HEAVY_READS).toBe(4);
  });

  it('runs reads up to its places at once; the others wait and take places in the order they came', async () => {
    const reads = heavyReadLimit({ atOnce: 2 });
    const order: string[] = [];
    const [a, b] = [pending(), pending()];
    const first = reads.run(async () => (await a.read(), order.push('a')));
    const second = reads.run(async () => (await b.read(), order.push('b')));
    const third = reads.run(async () => order.push('c'));
    const fourth = reads.run(async () => order.push('d'));
    expect([reads.active, reads.waiting]).toEqual([2, 2]);
    // b's place goes to c, then to d, while a holds the other.
    b.end();
    await Promise.all([second, third, fourth]);
    expect(order).toEqual(['b', 'c', 'd']);
    expect([reads.active, reads.waiting]).toEqual([1, 0]);
    a.end();
    await first;
    expect(order).toEqual(['b', 'c', 'd', 'a']);
    expect([reads.active, reads.waiting]).toEqual([0, 0]);
  });

  it('refuses a read that waited its while, in the envelope with Retry-After, and frees the place of one that failed', async () => {
    vi.useFakeTimers();
    let counted = 0;
    const reads = heavyReadLimit({ atOnce: 1, waitMs: 5_000, onRefused: () => counted++ });
    const held = pending();
    const running = reads.run(held.read);
    const waiting = reads.run(async () => 'never').catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(5_000);
    const refused = (await waiting) as ApiError;
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused.httpStatus).toBe(503);
    expect(refused.headers).toEqual({ 'Retry-After': String(HEAVY_READ_RETRY_AFTER_S) });
    expect(refused.toEnvelope()).toMatchObject({ status: 'SERVICE_UNAVAILABLE' });
    // Counted once (perfwatch_heavy_reads_refused_total).
    expect(counted).toBe(1);
    expect([reads.active, reads.waiting]).toEqual([1, 0]);
    held.end();
    await running;
    await expect(reads.run(() => Promise.reject(new Error('the store failed')))).rejects.toThrow('the store failed');
    await expect(reads.run(async () => 'runs')).resolves.toBe('runs');
  });

  it('refuses at once past its waiting room, and lets a reader whose client left go without a place', async () => {
    const reads = heavyReadLimit({ atOnce: 1, maxWaiting: 1 });
    const held = pending();
    const running = reads.run(held.read);
    const gone = new AbortController();
    const leaving = reads.run(async () => 'never', gone.signal).catch((error: unknown) => error);
    await expect(reads.run(async () => 'never')).rejects.toMatchObject({ status: 'SERVICE_UNAVAILABLE' });
    gone.abort();
    expect(await leaving).toBeInstanceOf(ApiError);
    expect(reads.waiting).toBe(0);
    const next = reads.run(async () => 'next');
    held.end();
    await running;
    await expect(next).resolves.toBe('next');
    expect(reads.active).toBe(0);
  });

  it('aborts when the response closes', () => {
    const listeners: Array<() => void> = [];
    const signal = whileConnected({ once: (_event, listener) => listeners.push(listener) });
    expect(signal.aborted).toBe(false);
    listeners.forEach((listener) => listener());
    expect(signal.aborted).toBe(true);
  });
});
