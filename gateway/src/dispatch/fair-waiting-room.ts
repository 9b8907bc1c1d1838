import TinyQueue from 'tinyqueue';

/**
 * The order in which runs waiting for an agent of one location get it, when every agent is
 * busy: the user whose runs took the fewest places lately goes first (decayed usage, halving
 * every `halfLifeMs`), then the run that waited longest. A user with hundreds of runs queued
 * has a large usage; another user's first run ranks before all of them and takes the next place
 * that frees: it waits for one run, not for the backlog. Two busy users share places evenly.
 *
 * The room only decides who asks when, whatever carries the runs: over NATS a run asks by
 * offering its job (agents at capacity leave the queue group), in local mode by taking one of
 * the in-process agent's places. A run arriving while better-ranked ones wait joins them rather
 * than racing them to the next place, and a place that frees goes to the best ranked. Written
 * here because it is the dispatchers' own policy; p-queue's priorities are fixed numbers at
 * insertion, and these change with every run a user is given.
 *
 * A user's runs rank among themselves by arrival, whatever the usage, so each user keeps its
 * waiting runs in a heap by arrival (tinyqueue, entries let go lazily when they stop waiting):
 * finding the best-ranked run looks at one run per user, not at every run in the room, which
 * at a thousand updates was thousands of runs at every run's end.
 */
export interface WaitingRoomOptions {
  /** How fast a user's past use is forgotten. */
  halfLifeMs?: number;
  /**
   * How long a run woken for a free place holds back the runs ranked after it: the time an offer
   * takes to come back refused when the place was taken after all (a reply would take a whole run).
   */
  claimMs?: number;
  now?: () => number;
}

export interface Ticket {
  readonly user: string;
  readonly seq: number;
  state: 'offering' | 'waiting' | 'woken' | 'left';
  wokenAt: number;
  wake?: () => void;
  /** In its user's `waiting` heap (a ticket there may have stopped waiting since). */
  queued: boolean;
  /** In its user's `claims` heap (a ticket there may have claimed long enough since). */
  claiming: boolean;
}

const byArrival = (a: Ticket, b: Ticket) => a.seq - b.seq;

/** One user's tickets in the room. */
class UserLine {
  tickets = 0;
  readonly waiting = new TinyQueue<Ticket>([], byArrival);
  /** Tickets woken for a place, for as long as their claim on it holds the runs after them back. */
  readonly claims = new TinyQueue<Ticket>([], byArrival);
}

export class FairWaitingRoom {
  readonly #halfLifeMs: number;
  readonly #claimMs: number;
  readonly #now: () => number;
  readonly #usage = new Map<string, { value: number; at: number }>();
  /** The users with tickets in the room. */
  readonly #lines = new Map<string, UserLine>();
  #waiting = 0;
  #seq = 0;

  constructor({ halfLifeMs = 10 * 60_000, claimMs = 1_000, now = Date.now }: WaitingRoomOptions = {}) {
    this.#halfLifeMs = halfLifeMs;
    this.#claimMs = claimMs;
    this.#now = now;
  }

  /** A run of `user` asks for a place: it counts against the user's share from now on. */
  enter(user: string): Ticket {
    const at = this.#now();
    this.#usage.set(user, { value: this.usage(user) + 1, at });
    this.#forgetIdle(at);
    const ticket: Ticket = { user, seq: this.#seq++, state: 'offering', wokenAt: 0, queued: false, claiming: false };
    const line = this.#lines.get(user) ?? this.#lines.set(user, new UserLine()).get(user)!;
    line.tickets++;
    return ticket;
  }

  /** The run is done asking (taken, or given up). */
  leave(ticket: Ticket): void {
    if (ticket.state === 'left') return;
    ticket.wake?.();
    ticket.state = 'left';
    const line = this.#lines.get(ticket.user)!;
    // Its heaps then hold only tickets that left.
    if (--line.tickets === 0) this.#lines.delete(ticket.user);
  }

  usage(user: string): number {
    const u = this.#usage.get(user);
    return u ? u.value * 2 ** (-(this.#now() - u.at) / this.#halfLifeMs) : 0;
  }

  /**
   * Whether runs ranked before this one are waiting for a place, or were just woken for one:
   * then this one waits behind them instead of racing them to it. Each user's earliest such
   * runs stand for all of theirs. A run woken for a place goes: `wake` chose it among the best
   * ranked, and the runs woken with it do not hold it back (they did: a location whose agents
   * were all busy then passed about one run per claim, bench/results.md).
   */
  behind(ticket: Ticket): boolean {
    if (ticket.state === 'woken') return false;
    const at = this.#now();
    const mine = this.usage(ticket.user);
    for (const [user, line] of this.#lines) {
      const theirs = user === ticket.user ? mine : this.usage(user);
      if (theirs > mine) continue;
      for (const first of [this.#firstWaiting(line), this.#firstClaim(line, at)]) {
        if (first && first !== ticket && (theirs < mine || first.seq < ticket.seq)) return true;
      }
    }
    return false;
  }

  /**
   * Waits for this run's turn: `then` is called once, when `wake` chooses it or after `ms`. A
   * callback, not a promise: a dispatcher holds thousands of waiting runs as data, without a
   * suspended function each (nats/nats-dispatcher.ts).
   */
  wait(ticket: Ticket, ms: number, then: () => void): void {
    ticket.state = 'waiting';
    this.#waiting++;
    if (!ticket.queued) {
      ticket.queued = true;
      this.#lines.get(ticket.user)!.waiting.push(ticket);
    }
    const done = (woken: boolean) => {
      clearTimeout(timer);
      this.#waiting--;
      ticket.wake = undefined;
      ticket.state = woken ? 'woken' : 'offering';
      ticket.wokenAt = this.#now();
      if (woken && !ticket.claiming) {
        ticket.claiming = true;
        this.#lines.get(ticket.user)!.claims.push(ticket);
      }
      then();
    };
    const timer = setTimeout(done, Math.max(0, ms), false);
    ticket.wake = () => done(true);
  }

  /**
   * `places` are free: the best-ranked waiting runs go. Called at every run's end with a place
   * or two; each user's usage is reckoned once.
   */
  wake(places: number): void {
    const usage = new Map<UserLine, number>();
    for (let n = 0; n < places; n++) {
      let best: { line: UserLine; first: Ticket; usage: number } | null = null;
      for (const [user, line] of this.#lines) {
        const first = this.#firstWaiting(line);
        if (!first) continue;
        const u = usage.get(line) ?? usage.set(line, this.usage(user)).get(line)!;
        if (!best || u < best.usage || (u === best.usage && first.seq < best.first.seq))
          best = { line, first, usage: u };
      }
      if (!best) return;
      best.line.waiting.pop();
      best.first.queued = false;
      best.first.wake?.();
    }
  }

  /** Runs waiting now (for metrics and tests). */
  get waiting(): number {
    return this.#waiting;
  }

  /** The user's earliest waiting run; the heap lets go of the ones before it that stopped waiting. */
  #firstWaiting(line: UserLine): Ticket | undefined {
    let first = line.waiting.peek();
    while (first && first.state !== 'waiting') {
      line.waiting.pop();
      first.queued = false;
      first = line.waiting.peek();
    }
    return first;
  }

  /** The user's earliest run whose claim on a place still holds; the heap lets go of older claims. */
  #firstClaim(line: UserLine, at: number): Ticket | undefined {
    let first = line.claims.peek();
    while (first && !(first.state === 'woken' && at - first.wokenAt < this.#claimMs)) {
      line.claims.pop();
      first.claiming = false;
      first = line.claims.peek();
    }
    return first;
  }

  /** Users with no run asking and next to no usage left are forgotten: the map stays small. */
  #forgetIdle(at: number): void {
    if (this.#usage.size < 1_000) return;
    for (const [user, u] of this.#usage)
      if (!this.#lines.has(user) && u.value * 2 ** (-(at - u.at) / this.#halfLifeMs) < 0.01) this.#usage.delete(user);
  }
}
