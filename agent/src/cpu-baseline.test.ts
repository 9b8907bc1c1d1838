import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createCpuBaseline } from './cpu-baseline.ts';

const logger = pino({ level: 'silent' });

/** A measurement the test ends by hand, to see what waits for it. */
function controlledMeasure(values: Array<number | Error>) {
  const calls: Array<() => void> = [];
  return {
    calls,
    measure: () =>
      new Promise<number>((resolve, reject) => {
        const value = values.shift()!;
        calls.push(() => (value instanceof Error ? reject(value) : resolve(value)));
      }),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("the agent's CPU baseline", () => {
  it('is measured before the first run, and a run arriving meanwhile waits for it', async () => {
    const { measure, calls } = controlledMeasure([2460.4]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const first = baseline.beforeRun(() => true);
    let secondDone = false;
    const second = baseline.beforeRun(() => false).then((value) => ((secondDone = true), value));
    await tick();
    expect(calls).toHaveLength(1);
    expect(secondDone).toBe(false);
    calls[0]!();
    expect(await first).toBe(2460);
    expect(await second).toBe(2460);
    expect(calls).toHaveLength(1);
  });

  it('is measured again after everyRuns runs, only at a moment the agent runs nothing', async () => {
    const { measure, calls } = controlledMeasure([2000, 2600]);
    const baseline = createCpuBaseline({ everyRuns: 2, measure, logger });
    const first = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    expect(await first).toBe(2000);
    baseline.runDone();
    expect(await baseline.beforeRun(() => true)).toBe(2000);
    baseline.runDone();
    // Due, but another run is in progress: the old baseline, no measurement beside a run.
    expect(await baseline.beforeRun(() => false)).toBe(2000);
    expect(calls).toHaveLength(1);
    const idle = baseline.beforeRun(() => true);
    await tick();
    expect(calls).toHaveLength(2);
    calls[1]!();
    expect(await idle).toBe(2600);
  });

  it('keeps the last baseline when a measurement fails, and tries again at the next idle moment', async () => {
    const { measure, calls } = controlledMeasure([new Error('Chrome did not start'), 2500]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const failed = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    expect(await failed).toBeNull();
    const next = baseline.beforeRun(() => true);
    await tick();
    calls[1]!();
    expect(await next).toBe(2500);
    expect(baseline.value).toBe(2500);
  });
  it('is measured again at once after a run alone found the machine more than 15 % faster, not after one beside another run', async () => {
    const { measure, calls } = controlledMeasure([2400, 3200]);
    const baseline = createCpuBaseline({ everyRuns: 50, measure, logger });
    const first = baseline.beforeRun(() => true);
    await tick();
    calls[0]!();
    expect(await first).toBe(2400);
    // Faster, but beside another run, or alone but within 15 %: the baseline stands.
    baseline.runDone({ benchmarkIndex: 3300, alone: false });
    baseline.runDone({ benchmarkIndex: 2700, alone: true });
    expect(await baseline.beforeRun(() => true)).toBe(2400);
    expect(calls).toHaveLength(1);
    // Alone and 33 % faster: measured under load, measured again.
    baseline.runDone({ benchmarkIndex: 3200, alone: true });
    const again = baseline.beforeRun(() => true);
    await tick();
    calls[1]!();
    expect(await again).toBe(3200);
  });
});
