import { parentPort, workerData } from 'node:worker_threads';
import { z } from 'zod';
import { createLogger } from '@perfwatch/common';
import { exitOnUnhandledRejection } from './browser-teardown-errors.ts';
import { startGuardedRunner } from './guarded-runner.ts';
import { RunFailure } from './run-failure.ts';
import { poolRequestSchema, runnerWorkerDataSchema, type PoolResponse } from './runner-pool-messages.ts';

// One runner of a runner pool: a Lighthouse runner with its own Chrome in a thread of its own,
// because Lighthouse keeps per-process state and cannot run twice at once in one isolate.
const port = z.custom<NonNullable<typeof parentPort>>((value) => value !== null).parse(parentPort);
const options = runnerWorkerDataSchema.parse(workerData);
const logger = createLogger({ name: 'perfwatch-agent', level: options.logLevel }).child({
  worker: options.runnerIndex,
});
exitOnUnhandledRejection(logger);
const { runner } = await startGuardedRunner(options, logger);

port.on('message', (raw: unknown) => {
  const message = poolRequestSchema.parse(raw);
  if (message.type === 'close') {
    // Ends the thread once its Chrome is gone: handles Lighthouse leaves behind (sockets,
    // timers) would otherwise keep it alive until the pool's deadline terminates it.
    void runner.close().finally(() => {
      port.close();
      process.exit(0);
    });
    return;
  }
  const work: Promise<PoolResponse> =
    message.type === 'calibrate'
      ? runner.calibrate!().then((benchmarkIndexes) => ({ id: message.id, ok: true, benchmarkIndexes }))
      : runner.run(message.request).then((output) => ({ id: message.id, ok: true, output }));
  work.then(
    (response) => port.postMessage(response),
    (error: unknown) => {
      const failure = error instanceof RunFailure ? error : new RunFailure('INTERNAL', (error as Error).message, true);
      port.postMessage({ id: message.id, ok: false, failure: failure.toFailure() } satisfies PoolResponse);
    },
  );
});
port.postMessage({ ready: true });
