import { ApiError, MAX_REPLY_INFLATED_BYTES } from '@perfwatch/common';

const MiB = 1024 * 1024;

/**
 * What one read of stored results (/v1/audit, /v1/compare) holds at its peak, however many cells
 * it reads: the result it has inflated, up to MAX_REPLY_INFLATED_BYTES (16 MiB, the largest an
 * agent's reply may inflate to, so the largest stored), while it is written or summarised (the
 * store hands out one at a time, and each is handed back once done with: releaseResult); and,
 * within a second 16 MiB, that result's compressed bytes (at most NATS's max_payload: 1 MB as
 * shipped, up to 16 MiB where an operator raises it), compare's two summaries (1,000 audits each
 * at most) and results under a megabyte left to the collector. Measured (bench/heavy-reads.ts):
 * sixteen audits of 16 MiB results asked at once, four reading, grew the gateway by 58–99 MB;
 * sixteen compares by at most 17 MB.
 */
export const HEAVY_READ_PEAK_BYTES = 2 * MAX_REPLY_INFLATED_BYTES;

/**
 * The memory heavy reads may take together. The gateway's container is limited to 512 MiB
 * (deploy/k8s); the gateway holds about 170 MB before any work (Node, its TypeScript loader,
 * the code: bench/results.md), which leaves about 340 MiB, of which reads get 128 MiB and the
 * rest stays with V8's young generation (YOUNG_GENERATION_BYTES, 48 MiB), updates (their
 * answers and the results kept for them, 32 MiB), the overview's batches and NATS's buffers.
 */
const HEAVY_READS_BUDGET_BYTES = 128 * MiB;

/** Heavy reads at once by default: 128 MiB ÷ 32 MiB, 4. MAX_HEAVY_READS sets it for a larger limit. */
export const DEFAULT_HEAVY_READS = Math.floor(HEAVY_READS_BUDGET_BYTES / HEAVY_READ_PEAK_BYTES);

/**
 * What V8's young generation may grow to in the gateway's image (deploy/gateway.Dockerfile:
 * --max-semi-space-size=16): two semi-spaces and the new large-object space of one each. Any
 * load grows it; it is the gateway's, not a read's.
 */
export const YOUNG_GENERATION_BYTES = 3 * 16 * MiB;

/**
 * How long a read waits for a place before it is refused: a snapshot of real results reads in
 * milliseconds, one of 24 results of 16 MiB in seconds; past this the caller is better told to
 * come back than kept hanging.
 */
const HEAVY_READ_WAIT_MS = 5_000;
/** Reads waiting at once; any beyond are refused at once (a waiter holds its connection, little else). */
const MAX_WAITING_READS = 64;
/** What a refused caller is told to wait, in seconds: the longest a place is waited for. */
export const HEAVY_READ_RETRY_AFTER_S = HEAVY_READ_WAIT_MS / 1000;

export interface HeavyReads {
  /**
   * Runs `read` once a place is free, waiting for one up to the wait; throws the 503 ApiError
   * (with Retry-After) when none came, and gives up waiting when `signal` aborts (the client left).
   */
  run<T>(read: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Reads running, and waiting for a place. */
  readonly active: number;
  readonly waiting: number;
}

/** The 503 a read gets when no place came for it, with when to try again. */
function tooManyReads(atOnce: number): ApiError {
  return new ApiError(
    'SERVICE_UNAVAILABLE',
    'Too many snapshot reads at once; try again shortly.',
    [`at most ${atOnce} reads of stored results (/v1/audit, /v1/compare) run at once on this gateway`],
    { headers: { 'Retry-After': String(HEAVY_READ_RETRY_AFTER_S) } },
  );
}

/**
 * Waits in `queue` for a place handed over by a read that ends; leaves the queue and rejects
 * with `refused()` when none came within `waitMs` or `signal` aborts (the caller left).
 */
function waitForPlace(
  queue: Array<() => void>,
  { waitMs, signal, refused }: { waitMs: number; signal: AbortSignal | undefined; refused: () => ApiError },
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const leave = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', leave);
      const at = queue.indexOf(take);
      if (at >= 0) queue.splice(at, 1);
      reject(refused());
    };
    // A place handed over by a read that ended: `active` already counts it.
    const take = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', leave);
      resolve();
    };
    const timer = setTimeout(leave, waitMs);
    signal?.addEventListener('abort', leave, { once: true });
    queue.push(take);
  });
}

/**
 * Places for reads of stored results, `atOnce` at a time (a semaphore, first come first served):
 * each such read may hold HEAVY_READ_PEAK_BYTES, and unbounded, concurrent ones would take the
 * gateway past its memory limit.
 */
export function heavyReadLimit({
  atOnce,
  waitMs = HEAVY_READ_WAIT_MS,
  maxWaiting = MAX_WAITING_READS,
  onRefused,
}: {
  /** MAX_HEAVY_READS. */
  atOnce: number;
  waitMs?: number;
  maxWaiting?: number;
  /** Told of every read refused for want of a place (a metric counts them). */
  onRefused?: () => void;
}): HeavyReads {
  let active = 0;
  const queue: Array<() => void> = [];

  const refused = (): ApiError => {
    onRefused?.();
    return tooManyReads(atOnce);
  };

  /** Resolves holding a place; rejects when none came within the wait or the caller left. */
  function place(signal: AbortSignal | undefined): Promise<void> {
    if (active < atOnce && queue.length === 0) {
      active++;
      return Promise.resolve();
    }
    if (queue.length >= maxWaiting || signal?.aborted) return Promise.reject(refused());
    return waitForPlace(queue, { waitMs, signal, refused });
  }

  function release(): void {
    const next = queue.shift();
    if (next) next();
    else active--;
  }

  return {
    async run(read, signal) {
      await place(signal);
      try {
        return await read();
      } finally {
        release();
      }
    },
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
  };
}

/** Aborted when the response's connection closes: a read still waiting for a place stops waiting. */
export function whileConnected(res: { once(event: 'close', listener: () => void): unknown }): AbortSignal {
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  return gone.signal;
}
