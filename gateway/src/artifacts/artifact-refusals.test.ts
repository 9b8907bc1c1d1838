import { describe, expect, it } from 'vitest';
import { artifactRefusal } from './artifact-refusals.ts';

const DAY = 86_400_000;
const TAKEN = new Date('2026-10-01T08:00:00Z');
const clock = (daysLater: number) => ({ retentionDays: 30, now: () => new Date(TAKEN.getTime() + daysLater * DAY) });
const STORED = { state: 'stored' as const, bytes: 1234 };

describe('artifactRefusal', () => {
  it('none for an artifact stored and within its retention: the store is asked', () => {
    expect(artifactRefusal('trace', { trace: STORED }, TAKEN, clock(29))).toBeNull();
  });

  it('404 naming the reason it was not kept', () => {
    const refusal = artifactRefusal(
      'requests',
      { requests: { state: 'missing', reason: 'STORE_DOWN: ECONNREFUSED' } },
      TAKEN,
      clock(1),
    );
    expect([refusal?.httpStatus, refusal?.errors]).toEqual([404, ['kind: not kept: STORE_DOWN: ECONNREFUSED']]);
  });

  it('404 for a kind never asked for, and for a cell from before artifacts', () => {
    for (const artifacts of [{ requests: STORED }, undefined])
      expect(artifactRefusal('trace', artifacts, TAKEN, clock(1))?.errors[0]).toMatch(/never asked for/);
  });

  it('404 saying when it expired, once the retention has passed, whether or not the store still has it', () => {
    const refusal = artifactRefusal('trace', { trace: STORED }, TAKEN, clock(30));
    expect(refusal?.httpStatus).toBe(404);
    expect(refusal?.message).toBe('The artifact has expired.');
    expect(refusal?.errors[0]).toContain('expired on 2026-10-31T08:00:00 (kept 30 days');
  });

  it('a missing artifact stays missing past the retention: its reason is what a reader needs', () => {
    const missing = { trace: { state: 'missing' as const, reason: 'NO_ARTIFACT' } };
    expect(artifactRefusal('trace', missing, TAKEN, clock(90))?.errors).toEqual(['kind: not kept: NO_ARTIFACT']);
  });
});
