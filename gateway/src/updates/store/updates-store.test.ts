import { describe, expect, it } from 'vitest';
import { admissionRoom, runsHeld, statusesKeptAgainst } from './updates-store.ts';

describe("the updates slice's rules", () => {
  it('keeps done final, and lets failed give way to done only', () => {
    expect(statusesKeptAgainst({ status: 'done', date: new Date() })).toEqual([]);
    expect(statusesKeptAgainst({ status: 'failed', reason: 'gone' })).toEqual(['done']);
    expect(statusesKeptAgainst({ status: 'running' })).toEqual(['done', 'failed']);
    expect(statusesKeptAgainst({ status: 'queued', reason: 'waits again' })).toEqual(['done', 'failed']);
  });

  it("admits while the user has room, never fewer than none, and weighs an update by its cells' runs", () => {
    expect(admissionRoom(4, 1)).toBe(3);
    expect(admissionRoom(4, 4)).toBe(0);
    expect(admissionRoom(4, 6)).toBe(0);
    expect(runsHeld(2, 3, 5)).toBe(30);
  });
});
