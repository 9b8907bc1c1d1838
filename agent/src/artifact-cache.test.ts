import { describe, expect, it } from 'vitest';
import { createArtifactCache } from './artifact-cache.ts';

const artifact = (bytes: number) => ({ gzip: new Uint8Array(bytes), truncated: false, pieces: 1, total: 1 });

describe('the agent’s cache of recent runs’ artifacts', () => {
  it('gives each kind of a run once, then forgets it', () => {
    const cache = createArtifactCache();
    cache.keep('j1', { requests: artifact(10), trace: artifact(100) });
    expect(cache.take('j1', 'trace')?.gzip.byteLength).toBe(100);
    expect(cache.take('j1', 'trace')).toBeUndefined();
    expect(cache.bytes).toBe(10);
    expect(cache.take('j1', 'requests')?.gzip.byteLength).toBe(10);
    expect(cache.runs).toBe(0);
  });

  it('keeps the most recent runs only, by count and by bytes', () => {
    const cache = createArtifactCache({ maxRuns: 3, maxBytes: 1000 });
    for (const id of ['a', 'b', 'c', 'd']) cache.keep(id, { trace: artifact(100) });
    expect(cache.take('a', 'trace')).toBeUndefined();
    expect(cache.runs).toBe(3);
    cache.keep('big', { trace: artifact(900) });
    expect(cache.bytes).toBeLessThanOrEqual(1000);
    expect(cache.take('big', 'trace')).toBeDefined();
    cache.keep('huge', { trace: artifact(2000) });
    expect(cache.take('huge', 'trace')).toBeUndefined();
  });

  it('forgets runs nobody pulled after their time', () => {
    let now = 0;
    const cache = createArtifactCache({ ttlMs: 1000, now: () => now });
    cache.keep('old', { requests: artifact(5) });
    now = 1001;
    expect(cache.take('old', 'requests')).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });
});
