import { describe, expect, it } from 'vitest';
import { formatApiDateTime, parseApiDate, parseApiDateTime, truncateToSecond } from './dates.ts';

describe('API dates', () => {
  it('formats UTC to the second with no zone suffix', () => {
    expect(formatApiDateTime(new Date('2026-03-04T05:06:07.890Z'))).toBe('2026-03-04T05:06:07');
  });

  it('accepts the plain form, a trailing Z and milliseconds, all as UTC', () => {
    const expected = Date.UTC(2026, 2, 4, 5, 6, 7);
    expect(parseApiDateTime('2026-03-04T05:06:07')?.getTime()).toBe(expected);
    expect(parseApiDateTime('2026-03-04T05:06:07Z')?.getTime()).toBe(expected);
    // Milliseconds name the same snapshot second.
    expect(parseApiDateTime('2026-03-04T05:06:07.999Z')?.getTime()).toBe(expected);
  });

  it('rejects malformed and impossible dates instead of rolling them over', () => {
    for (const bad of [
      '2026-02-30T00:00:00',
      '2026-13-01T00:00:00',
      '2026-01-01T24:00:00',
      '2026-01-01 00:00:00',
      '2026-01-01T00:00:00+02:00',
      '',
      'yesterday',
    ]) {
      expect(parseApiDateTime(bad), bad).toBeNull();
    }
    expect(parseApiDate('2024-02-29')?.toISOString()).toBe('2024-02-29T00:00:00.000Z');
    expect(parseApiDate('2025-02-29')).toBeNull();
  });

  it('round-trips what it formats', () => {
    const now = truncateToSecond(new Date());
    expect(parseApiDateTime(formatApiDateTime(now))?.getTime()).toBe(now.getTime());
  });
});
