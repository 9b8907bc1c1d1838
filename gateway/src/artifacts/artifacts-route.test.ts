import { describe, expect, it } from 'vitest';
import { traceFileName } from './artifacts-route.ts';

describe('traceFileName', () => {
  it('names the page, the date and the cell, in characters every file system and header take', () => {
    const cell = { date: '2026-11-22T11:18:40', device: 'mobile', location: 'london' } as const;
    expect(traceFileName({ ...cell, url: 'https://shop.example/checkout?step=2' })).toBe(
      'perfwatch-shop.example-2026-11-22T11-18-40-mobile-london.trace.json',
    );
    expect(traceFileName({ ...cell, url: 'http://[::1]:8080/' })).toBe(
      'perfwatch----1--2026-11-22T11-18-40-mobile-london.trace.json',
    );
  });
});
