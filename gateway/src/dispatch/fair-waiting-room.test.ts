import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FairWaitingRoom, type Ticket } from './fair-waiting-room.ts';

function roomAt(start = 0) {
  const clock = { now: start };
  const room = new FairWaitingRoom({ halfLifeMs: 60_000, claimMs: 1_000, now: () => clock.now });
  return { room, clock };
}

/** `room.wait` as a promise, for the tests to await. */
const waitIn = (room: FairWaitingRoom, ticket: Ticket, ms: number) =>
  new Promise<void>((resolve) => room.wait(ticket, ms, resolve));

describe('FairWaitingRoom', () => {
  it("gives the next place to a light user's run before a heavy user's backlog, and to one user's runs in arrival order", async () => {
    const { room } = roomAt();
    const order: string[] = [];
    const heavy = Array.from({ length: 5 }, (_, i) => {
      const t = room.enter('heavy');
      void waitIn(room, t, 60_000).then(() => order.push(`heavy${i}`));
      return t;
    });
    const light = room.enter('light');
    // The light user's run arrives last and waits behind nobody.
    expect(room.behind(light)).toBe(false);
    void waitIn(room, light, 60_000).then(() => order.push('light'));
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
    const waiting = waitIn(room, first, 60_000);
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

  it('lets every run woken for a place go, however many were woken together', async () => {
    const { room } = roomAt();
    const tickets = Array.from({ length: 5 }, () => room.enter('a'));
    const woken = tickets.map((t) => waitIn(room, t, 60_000));
    const late = room.enter('a');
    room.wake(3);
    await Promise.all(woken.slice(0, 3));
    expect(tickets.map((t) => room.behind(t))).toEqual([false, false, false, true, true]);
    // A run that was not woken still waits behind the ones that were, and behind those waiting.
    expect(room.behind(late)).toBe(true);
    for (const t of [...tickets, late]) room.leave(t);
  });

  it("forgets use over time: a user's usage halves every half-life", () => {
    const { room, clock } = roomAt();
    for (let i = 0; i < 8; i++) room.leave(room.enter('a'));
    expect(room.usage('a')).toBe(8);
    clock.now += 60_000;
    expect(room.usage('a')).toBeCloseTo(4);
    clock.now += 120_000;
    expect(room.usage('a')).toBeCloseTo(1);
    expect(room.usage('never')).toBe(0);
  });

  it("lets a waiting run go at its timeout, and a woken run's place go to it alone", async () => {
    const { room } = roomAt();
    const t = room.enter('a');
    const started = Date.now();
    await waitIn(room, t, 20);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(t.state).toBe('offering');
    room.wake(3);
    expect(room.waiting).toBe(0);
  });
});

/**
 * The room as first written, scanning every ticket: the reference the heaps are held to. Its
 * rule is the one documented on FairWaitingRoom.
 */
class ScanningRoom {
  readonly #usage = new Map<string, { value: number; at: number }>();
  readonly #tickets = new Set<{ user: string; seq: number; state: string; wokenAt: number }>();
  #seq = 0;
  readonly now: () => number;
  constructor(now: () => number) {
    this.now = now;
  }
  enter(user: string) {
    this.#usage.set(user, { value: this.usage(user) + 1, at: this.now() });
    const ticket = { user, seq: this.#seq++, state: 'offering', wokenAt: 0 };
    this.#tickets.add(ticket);
    return ticket;
  }
  leave(ticket: { state: string }) {
    ticket.state = 'left';
    this.#tickets.delete(ticket as never);
  }
  usage(user: string) {
    const u = this.#usage.get(user);
    return u ? u.value * 2 ** (-(this.now() - u.at) / 60_000) : 0;
  }
  behind(ticket: { user: string; seq: number; state: string }) {
    if (ticket.state === 'woken') return false;
    for (const other of this.#tickets) {
      if (other === ticket) continue;
      const contending = other.state === 'waiting' || (other.state === 'woken' && this.now() - other.wokenAt < 1_000);
      if (contending && this.#before(other, ticket)) return true;
    }
    return false;
  }
  wait(ticket: { state: string }) {
    ticket.state = 'waiting';
  }
  wake(places: number): number[] {
    const woken: number[] = [];
    for (let n = 0; n < places; n++) {
      const waiting = [...this.#tickets].filter((t) => t.state === 'waiting');
      if (waiting.length === 0) break;
      const best = waiting.reduce((a, b) => (this.#before(b, a) ? b : a));
      best.state = 'woken';
      best.wokenAt = this.now();
      woken.push(best.seq);
    }
    return woken;
  }
  #before(a: { user: string; seq: number }, b: { user: string; seq: number }) {
    const [ua, ub] = [this.usage(a.user), this.usage(b.user)];
    return ua !== ub ? ua < ub : a.seq < b.seq;
  }
}

describe('FairWaitingRoom against the scanning room it replaced', () => {
  // The clock moves seldom: users then often have equal usage, where arrival decides.
  const op = fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant('enter' as const), user: fc.constantFrom('a', 'b', 'c') }), weight: 3 },
    {
      arbitrary: fc.record({
        kind: fc.constantFrom('wait' as const, 'leave' as const, 'behind' as const),
        ticket: fc.nat(40),
      }),
      weight: 4,
    },
    { arbitrary: fc.record({ kind: fc.constant('wake' as const), places: fc.integer({ min: 1, max: 3 }) }), weight: 2 },
    {
      arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 1_500 }) }),
      weight: 1,
    },
  );

  it('wakes the same runs and holds back the same runs, whatever happens in the room', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        const { room, clock } = roomAt();
        const reference = new ScanningRoom(() => clock.now);
        const tickets: Array<{ mine: Ticket; theirs: ReturnType<ScanningRoom['enter']> }> = [];
        for (const o of ops) {
          const t = 'ticket' in o ? tickets[o.ticket % Math.max(1, tickets.length)] : undefined;
          if (o.kind === 'enter') tickets.push({ mine: room.enter(o.user), theirs: reference.enter(o.user) });
          else if (o.kind === 'advance') clock.now += o.ms;
          else if (o.kind === 'wake') {
            const before = tickets.filter((x) => x.mine.state === 'waiting');
            room.wake(o.places);
            const woken = before.filter((x) => x.mine.state === 'woken').map((x) => x.mine.seq);
            expect(woken.sort((x, y) => x - y)).toEqual(reference.wake(o.places).sort((x, y) => x - y));
          } else if (t && t.mine.state !== 'left') {
            if (o.kind === 'wait' && t.mine.state !== 'waiting') {
              room.wait(t.mine, 3_600_000, () => {});
              reference.wait(t.theirs);
            } else if (o.kind === 'leave') {
              room.leave(t.mine);
              reference.leave(t.theirs);
            } else if (o.kind === 'behind' && t.mine.state !== 'waiting') {
              expect(room.behind(t.mine)).toBe(reference.behind(t.theirs));
            }
          }
          expect(room.waiting).toBe(tickets.filter((x) => x.theirs.state === 'waiting').length);
        }
        for (const { mine } of tickets) room.leave(mine);
      }),
      // Two users of equal usage waiting: the earlier arrival goes first.
      {
        numRuns: 1_000,
        examples: [
          [
            [
              { kind: 'enter', user: 'b' },
              { kind: 'enter', user: 'a' },
              { kind: 'wait', ticket: 1 },
              { kind: 'wait', ticket: 0 },
              { kind: 'wake', places: 1 },
            ],
          ],
        ],
      },
    );
  });
});
