import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createCpuBaseline } from './cpu-baseline.ts';

const logger = pino({ level: 'silent' });

/** A measurement the test ends by hand, to see what waits for it. */
function controlledMeasure(values: Array<number[] | Error>) {
  const calls: Array<() => void> = [];
  return {
    calls,
    measure: () =>
      new Promise<number[]>((resolve, reject) => {
        const value = values.shift()!;
        calls.push(() => (value instanceof Error ? reject(value) : resolve(value)));
      }),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("the agent's CPU baseline", () => {
  it('is measured before the first run, and a run arriving meanwhile waits for it', async () => {
    const { measure, calls } = controlledMeasure([[2460.4, 2400, 2500, 2455, 2470]]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const first = baseline.beforeRun(() => true);
    let secondDone = false;
    const second = baseline.beforeRun(() => false).then((value) => ((secondDone = true), value));
    await tick();
    expect(calls).toHaveLength(1);
    expect(secondDone).toBe(false);
    calls[0]!();
    // The median of the readings, and their robust spread: 1.4826 × MAD (10) ÷ 2460.
    expect(await first).toEqual({ index: 2460, spread: 0.006 });
    expect(await second).toEqual({ index: 2460, spread: 0.006 });
    expect(calls).toHaveLength(1);
  });

  it('is a median no single odd reading moves, with a spread as wide as the readings show', async () => {
    const { measure, calls } = controlledMeasure([[1619, 1100, 1580, 1650, 1600]]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const first = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    // The fastest of five would say 1,650; one slow reading (1,100) moves neither figure far.
    const { index, spread } = (await first)!;
    expect(index).toBe(1600);
    expect(spread).toBeCloseTo((1.4826 * 20) / 1600, 3);
  });

  it('is measured again after everyRuns runs, only at a moment the agent runs nothing, the readings kept in a rolling window', async () => {
    const { measure, calls } = controlledMeasure([
      [2000, 2000, 2000],
      [2600, 2600, 2600, 2600],
    ]);
    const baseline = createCpuBaseline({ everyRuns: 2, measure, logger });
    const first = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    expect((await first)!.index).toBe(2000);
    baseline.runDone();
    expect((await baseline.beforeRun(() => true))!.index).toBe(2000);
    baseline.runDone();
    // Due, but another run is in progress: the old baseline, no measurement beside a run.
    expect((await baseline.beforeRun(() => false))!.index).toBe(2000);
    expect(calls).toHaveLength(1);
    const idle = baseline.beforeRun(() => true);
    await tick();
    expect(calls).toHaveLength(2);
    calls[1]!();
    // Three readings of 2,000 and four of 2,600: the median of all seven.
    expect((await idle)!.index).toBe(2600);
  });

  it('keeps the last baseline when a measurement fails, and tries again at the next idle moment', async () => {
    const { measure, calls } = controlledMeasure([new Error('Chrome did not start'), [2500]]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const failed = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    expect(await failed).toBeNull();
    const next = baseline.beforeRun(() => true);
    await tick();
    calls[1]!();
    expect((await next)!.index).toBe(2500);
    expect(baseline.value!.index).toBe(2500);
  });

  it('takes the index of each run made alone within the limit as one more reading; not one beside another run, nor a slowed one', async () => {
    const { measure, calls } = controlledMeasure([[2000, 2000, 2000]]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const first = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    await first;
    baseline.runDone({ benchmarkIndex: 1000, alone: false });
    baseline.runDone({ benchmarkIndex: 1500, alone: true });
    baseline.runDone({ benchmarkIndex: null, alone: true });
    expect(baseline.value).toEqual({ index: 2000, spread: 0 });
    for (const index of [1800, 1800, 1800, 1800]) baseline.runDone({ benchmarkIndex: index, alone: true });
    // Four lone readings of 1,800 beside three of 2,000: the median follows the runs.
    expect(baseline.value!.index).toBe(1800);
    expect(calls).toHaveLength(1);
  });

  it('is measured again, afresh, at once after a run alone found the machine faster than the limit, not after one beside another run', async () => {
    const { measure, calls } = controlledMeasure([
      [2400, 2400, 2400],
      [3200, 3200, 3200],
    ]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const first = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    expect((await first)!.index).toBe(2400);
    // Faster, but beside another run, or alone but within 15 %: the baseline stands.
    baseline.runDone({ benchmarkIndex: 3300, alone: false });
    baseline.runDone({ benchmarkIndex: 2700, alone: true });
    expect((await baseline.beforeRun(() => true))!.index).toBe(2400);
    expect(calls).toHaveLength(1);
    // Alone and 33 % faster: the readings were taken under load; replaced, not outvoted.
    baseline.runDone({ benchmarkIndex: 3200, alone: true });
    const again = baseline.beforeRun(() => true);
    await tick();
    calls[1]!();
    expect((await again)!.index).toBe(3200);
  });
});
