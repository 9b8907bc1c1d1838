/**
 * The order in which runs waiting for an agent of one location get it, when every agent is
 * busy: the user whose runs took the fewest places lately goes first (decayed usage, halving
 * every `halfLifeMs`), then the run that waited longest. A user with hundreds of runs queued
 * has a large usage; another user's first run ranks before all of them and takes the next place
 * that frees: it waits for one run, not for the backlog. Two busy users share places evenly.
 *
 * Runs ask for a place by offering their job (agents at capacity leave the NATS queue group),
 * so the room only decides who offers when: a run arriving while better-ranked ones wait joins
 * them rather than racing them to the next place, and a place announced free goes to the best
 * ranked. Written here because it is the dispatcher's own policy; p-queue's priorities are
 * fixed numbers at insertion, and these change with every run a user is given.
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
  state: 'offering' | 'waiting' | 'woken';
  wokenAt: number;
  wake?: () => void;
}

export class FairWaitingRoom {
  readonly #halfLifeMs: number;
  readonly #claimMs: number;
  readonly #now: () => number;
  readonly #usage = new Map<string, { value: number; at: number }>();
  readonly #tickets = new Set<Ticket>();
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
    const ticket: Ticket = { user, seq: this.#seq++, state: 'offering', wokenAt: 0 };
    this.#tickets.add(ticket);
    return ticket;
  }

  /** The run is done asking (taken, or given up). */
  leave(ticket: Ticket): void {
    ticket.wake?.();
    this.#tickets.delete(ticket);
  }

  usage(user: string): number {
    const u = this.#usage.get(user);
    return u ? u.value * 2 ** (-(this.#now() - u.at) / this.#halfLifeMs) : 0;
  }

  /**
   * Whether runs ranked before this one are waiting for a place, or were just woken for one:
   * then this one waits behind them instead of racing them to it.
   */
  behind(ticket: Ticket): boolean {
    const at = this.#now();
    for (const other of this.#tickets) {
      if (other === ticket) continue;
      const contending = other.state === 'waiting' || (other.state === 'woken' && at - other.wokenAt < this.#claimMs);
      if (contending && this.#before(other, ticket)) return true;
    }
    return false;
  }

  /** Waits for this run's turn: woken by `wake`, or after `ms`. */
  wait(ticket: Ticket, ms: number): Promise<void> {
    ticket.state = 'waiting';
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), Math.max(0, ms));
      const done = (woken: boolean) => {
        clearTimeout(timer);
        ticket.wake = undefined;
        ticket.state = woken ? 'woken' : 'offering';
        ticket.wokenAt = this.#now();
        resolve();
      };
      ticket.wake = () => done(true);
    });
  }

  /**
   * `places` are free: the best-ranked waiting runs go. Called at every run's end with a place
   * or two, so the best are picked by scanning, not by sorting thousands of waiting runs each
   * time, and each user's usage is reckoned once.
   */
  wake(places: number): void {
    const usage = new Map<string, number>();
    const rank = (t: Ticket) => usage.get(t.user) ?? usage.set(t.user, this.usage(t.user)).get(t.user)!;
    const waiting: Ticket[] = [];
    for (const t of this.#tickets) if (t.state === 'waiting') waiting.push(t);
    for (let n = 0; n < places && waiting.length > 0; n++) {
      let best = 0;
      for (let i = 1; i < waiting.length; i++) {
        const [a, b] = [waiting[i]!, waiting[best]!];
        if (rank(a) < rank(b) || (rank(a) === rank(b) && a.seq < b.seq)) best = i;
      }
      const [ticket] = waiting.splice(best, 1);
      ticket!.wake?.();
    }
  }

  /** Runs waiting now (for metrics and tests). */
  get waiting(): number {
    let n = 0;
    for (const t of this.#tickets) if (t.state === 'waiting') n++;
    return n;
  }

  #before(a: Ticket, b: Ticket): boolean {
    const ua = this.usage(a.user);
    const ub = this.usage(b.user);
    return ua !== ub ? ua < ub : a.seq < b.seq;
  }

  /** Users with no run asking and next to no usage left are forgotten: the map stays small. */
  #forgetIdle(at: number): void {
    if (this.#usage.size < 1_000) return;
    const asking = new Set([...this.#tickets].map((t) => t.user));
    for (const [user, u] of this.#usage) if (!asking.has(user) && u.value * 2 ** (-(at - u.at) / this.#halfLifeMs) < 0.01) this.#usage.delete(user);
  }
}
