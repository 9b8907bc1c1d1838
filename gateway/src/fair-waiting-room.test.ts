import { describe, expect, it } from 'vitest';
import { FairWaitingRoom } from './fair-waiting-room.ts';

function roomAt(start = 0) {
  const clock = { now: start };
  const room = new FairWaitingRoom({ halfLifeMs: 60_000, claimMs: 1_000, now: () => clock.now });
  return { room, clock };
}

describe('FairWaitingRoom', () => {
  it('gives the next place to a light user\'s run before a heavy user\'s backlog, and to one user\'s runs in arrival order', async () => {
    const { room } = roomAt();
    const order: string[] = [];
    const heavy = Array.from({ length: 5 }, (_, i) => {
      const t = room.enter('heavy');
      void room.wait(t, 60_000).then(() => order.push(`heavy${i}`));
      return t;
    });
    const light = room.enter('light');
    // The light user's run arrives last and waits behind nobody.
    expect(room.behind(light)).toBe(false);
    void room.wait(light, 60_000).then(() => order.push('light'));
    room.wake(2);
    await Promise.resolve();
    expect(order).toEqual(['light', 'heavy0']);
    expect(room.waiting).toBe(4);
    for (const t of heavy) room.leave(t);
    room.leave(light);
    expect(room.waiting).toBe(0);
  });

  it('holds a run back while better-ranked runs wait or were just woken for a place, not after', async () => {
    const { room, clock } = roomAt();
    const first = room.enter('a');
    const waiting = room.wait(first, 60_000);
    const second = room.enter('a');
    expect(room.behind(second)).toBe(true);
    room.wake(1);
    await waiting;
    // Woken: its offer may still come back refused; the runs after it let it try first.
    expect(room.behind(second)).toBe(true);
    clock.now += 1_001;
    expect(room.behind(second)).toBe(false);
    // A run offering without having waited (agents had room) holds nobody back.
    const fresh = room.enter('b');
    const third = room.enter('a');
    expect(room.behind(third)).toBe(false);
    room.leave(fresh);
  });

  it('forgets use over time: a user\'s usage halves every half-life', () => {
    const { room, clock } = roomAt();
    for (let i = 0; i < 8; i++) room.leave(room.enter('a'));
    expect(room.usage('a')).toBe(8);
    clock.now += 60_000;
    expect(room.usage('a')).toBeCloseTo(4);
    clock.now += 120_000;
    expect(room.usage('a')).toBeCloseTo(1);
    expect(room.usage('never')).toBe(0);
  });

  it('lets a waiting run go at its timeout, and a woken run\'s place go to it alone', async () => {
    const { room } = roomAt();
    const t = room.enter('a');
    const started = Date.now();
    await room.wait(t, 20);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(t.state).toBe('offering');
    room.wake(3);
    expect(room.waiting).toBe(0);
  });
});
