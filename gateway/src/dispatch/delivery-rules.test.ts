import { describe, expect, it } from 'vitest';
import { dedupeId, stepAfter } from './delivery-rules.ts';

describe('delivery rules', () => {
  it('de-duplicates an update by its id, but not a job queued again once the queue let it go', () => {
    expect(dedupeId('u-1', false, 5)).toBe(dedupeId('u-1', false, 9));
    expect(dedupeId('u-1', true, 5)).not.toBe('u-1');
    expect(dedupeId('u-1', true, 5)).not.toBe(dedupeId('u-1', true, 9));
  });

  it('lets a finished job go, delivers a failure that may pass again after the retry delay, and at once when stopping', () => {
    const going = { retryDelayMs: 700, stopping: false };
    expect(stepAfter({ kind: 'done' }, going)).toEqual({ kind: 'finished' });
    expect(stepAfter({ kind: 'final', reason: 'gone' }, going)).toEqual({ kind: 'finished', reason: 'gone' });
    expect(stepAfter({ kind: 'retry', reason: 'busy' }, going)).toEqual({ kind: 'again', delayMs: 700 });
    expect(stepAfter({ kind: 'retry', reason: 'busy' }, { ...going, stopping: true })).toEqual({
      kind: 'again',
      delayMs: 0,
    });
    expect(stepAfter({ kind: 'unrecorded' }, going)).toEqual({ kind: 'unrecorded' });
  });
});
