import { describe, expect, it } from 'vitest';
import { benchmarkDriftLimit, cpuMultiplierFor, indexCentreAndSpread } from './cpu-calibration.ts';

describe('cpuMultiplierFor', () => {
  it("follows the calculator's anchor points across its three ranges", () => {
    expect(cpuMultiplierFor(150)).toBe(1);
    expect(cpuMultiplierFor(475)).toBe(1.5);
    expect(cpuMultiplierFor(800)).toBe(2);
    expect(cpuMultiplierFor(1050)).toBe(2.5);
    expect(cpuMultiplierFor(1300)).toBe(3);
    expect(cpuMultiplierFor(1533)).toBe(4);
    expect(cpuMultiplierFor(1766)).toBe(5);
    expect(cpuMultiplierFor(2000)).toBe(6);
  });

  it('rises with the benchmark index and has no jump where the ranges meet', () => {
    let last = cpuMultiplierFor(150)!;
    for (let index = 160; index <= 3000; index += 10) {
      const multiplier = cpuMultiplierFor(index)!;
      expect(multiplier).toBeGreaterThanOrEqual(last);
      expect(multiplier - last).toBeLessThan(0.06);
      last = multiplier;
    }
    for (const edge of [800, 1300])
      expect(Math.abs(cpuMultiplierFor(edge - 0.001)! - cpuMultiplierFor(edge)!)).toBeLessThanOrEqual(0.01);
  });

  it('has no multiplier for a machine slower than the emulated phone, or no index at all', () => {
    expect(cpuMultiplierFor(149)).toBeNull();
    expect(cpuMultiplierFor(0)).toBeNull();
    expect(cpuMultiplierFor(Number.NaN)).toBeNull();
  });
});

describe("the drift a run's benchmark index is allowed", () => {
  it('is 15 %, or three of the agent’s own spreads when they are wider, never over 40 %', () => {
    expect(benchmarkDriftLimit(undefined)).toBe(0.15);
    expect(benchmarkDriftLimit(0.02)).toBe(0.15);
    expect(benchmarkDriftLimit(0.08)).toBeCloseTo(0.24);
    expect(benchmarkDriftLimit(0.3)).toBe(0.4);
    expect(benchmarkDriftLimit(Number.NaN)).toBe(0.15);
  });

  it('reads the centre and spread of readings robustly: one odd reading moves neither far', () => {
    expect(indexCentreAndSpread([])).toBeNull();
    const steady = indexCentreAndSpread([3600, 3650, 3550, 3700, 3500])!;
    expect(steady.centre).toBe(3600);
    expect(steady.spread).toBeCloseTo((1.4826 * 50) / 3600, 6);
    const withOutlier = indexCentreAndSpread([3600, 3650, 3550, 3700, 922])!;
    expect(withOutlier.centre).toBe(3600);
    expect(withOutlier.spread).toBeCloseTo((1.4826 * 50) / 3600, 6);
  });
});
