import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { PageRunner, RunOutput, RunRequest } from './lighthouse-runner.ts';
import { RunFailure } from './run-failure.ts';
import {
  isAuditErrorCode,
  type PoolRequest,
  type PoolResponse,
  type RunnerWorkerData,
} from './runner-pool-messages.ts';

/** What each runner thread is started with; the pool adds its runner's index. */
type WorkerOptions = Omit<RunnerWorkerData, 'runnerIndex'>;

export interface RunnerPoolOptions {
  size: number;
  worker: WorkerOptions;
  logger: Logger;
}

interface Runner {
  worker: Worker;
  ready: Promise<void>;
  busy: boolean;
  pending: {
    id: number;
    resolve: (response: Extract<PoolResponse, { ok: true }>) => void;
    reject: (error: RunFailure) => void;
  } | null;
}

/**
 * `size` Lighthouse runners for an agent with a capacity above one: each in a worker thread
 * with its own Chrome and guard proxy, so runs never share a Chrome or Lighthouse's
 * per-process state. A thread that dies fails its run (BROWSER_FAILED, retryable) and is
 * replaced on the next run. Runs beyond `size` at once are refused; the agent never asks.
 */
export function createRunnerPool(options: RunnerPoolOptions): RunnerPool {
  return new RunnerPool(options);
}

export class RunnerPool implements PageRunner {
  readonly #options: WorkerOptions;
  readonly #logger: Logger;
  readonly #runners: Array<Runner | null>;
  #nextId = 0;
  #closing = false;

  constructor({ size, worker, logger }: RunnerPoolOptions) {
    this.#options = worker;
    this.#logger = logger;
    this.#runners = Array.from({ length: size }, () => null);
  }

  readonly run = async (request: RunRequest): Promise<RunOutput> => {
    const response = await this.#inFreeRunner((id) => ({ type: 'run', id, request }));
    if (!('output' in response))
      throw new RunFailure('INTERNAL', 'the runner thread answered a run with a calibration', true);
    return response.output;
  };

  readonly calibrate = async (): Promise<number[]> => {
    const response = await this.#inFreeRunner((id) => ({ type: 'calibrate', id }));
    if (!('benchmarkIndexes' in response))
      throw new RunFailure('INTERNAL', 'the runner thread answered a calibration with a run', true);
    return response.benchmarkIndexes;
  };

  readonly close = async (): Promise<void> => {
    this.#closing = true;
    await Promise.all(this.#runners.map((runner) => runner && closeRunner(runner)));
  };

  #spawn(index: number): Runner {
    return spawnRunner(index, this.#options, (runner, why) => {
      if (this.#runners[index] === runner) this.#runners[index] = null;
      if (!this.#closing)
        this.#logger.error({ worker: index, why }, 'runner thread died; it is replaced on the next run');
    });
  }

  /** Sends one piece of work to a free thread, started on first use, and waits for its answer. */
  async #inFreeRunner(message: (id: number) => PoolRequest): Promise<Extract<PoolResponse, { ok: true }>> {
    if (this.#closing) throw new RunFailure('AGENT_SHUTTING_DOWN', 'the runner pool is closing', true);
    const runners = this.#runners;
    const index = runners.findIndex((runner) => runner === null || !runner.busy);
    if (index < 0) throw new RunFailure('INTERNAL', `all ${runners.length} runners are busy`, true);
    const runner = runners[index] ?? (runners[index] = this.#spawn(index));
    runner.busy = true;
    try {
      await runner.ready;
    } catch (error) {
      if (runners[index] === runner) runners[index] = null;
      throw new RunFailure('BROWSER_FAILED', `the runner thread did not start: ${(error as Error).message}`, true, {
        cause: error,
      });
    }
    if (runners[index] !== runner)
      throw new RunFailure('BROWSER_FAILED', 'the runner thread died before the run started', true);
    const id = this.#nextId++;
    const result = new Promise<Extract<PoolResponse, { ok: true }>>((resolve, reject) => {
      runner.pending = { id, resolve, reject };
    });
    runner.worker.postMessage(message(id));
    return result;
  }
}

/** Asks a thread to kill its Chrome and end; one that hangs is terminated after 15 s. */
async function closeRunner(runner: Runner): Promise<void> {
  const exited = once(runner.worker, 'exit');
  runner.worker.postMessage({ type: 'close' } satisfies PoolRequest);
  const deadline = setTimeout(() => void runner.worker.terminate(), 15_000);
  await exited;
  clearTimeout(deadline);
}

/**
 * The runner thread at `index`, ready once it says so. A thread that dies fails the run it
 * had (BROWSER_FAILED, retryable); `lost` is told, to free its place in the pool.
 */
function spawnRunner(index: number, options: WorkerOptions, lost: (runner: Runner, why: string) => void): Runner {
  const worker = new Worker(new URL('./runner-worker.ts', import.meta.url), {
    workerData: { ...options, runnerIndex: index } satisfies RunnerWorkerData,
  });
  const runner: Runner = {
    worker,
    busy: false,
    pending: null,
    ready: new Promise((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`runner thread exited with ${code} before it was ready`)));
    }),
  };
  runner.ready.catch(() => undefined);
  worker.on('message', (message: PoolResponse | { ready: true }) => answered(runner, message));
  const died = (why: string) => {
    lost(runner, why);
    runner.pending?.reject(new RunFailure('BROWSER_FAILED', `the runner thread died: ${why}`, true));
    runner.pending = null;
  };
  worker.on('error', (error) => died(error.message));
  worker.on('exit', (code) => died(`exit code ${code}`));
  return runner;
}

/** The thread's answer to the runner's pending work (any other message is not for it). */
function answered(runner: Runner, message: PoolResponse | { ready: true }): void {
  if (!('id' in message) || runner.pending?.id !== message.id) return;
  const { resolve, reject } = runner.pending;
  runner.pending = null;
  runner.busy = false;
  if (message.ok) resolve(message);
  else
    reject(
      new RunFailure(
        isAuditErrorCode(message.failure.code) ? message.failure.code : 'INTERNAL',
        message.failure.message,
        message.failure.retryable,
      ),
    );
}
