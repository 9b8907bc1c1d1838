import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus } from 'node:os';
import { describe, expect, it } from 'vitest';
import { otherCpuShare, watchOtherCpu } from './other-cpu-share.ts';

describe("the share of the host's CPU a run did not have", () => {
  it("is the host's busy time less the run's own, over the host's time", () => {
    // Two cores for 5 s (1,000 ticks): 600 busy, of which the run's 100: others took half.
    expect(otherCpuShare({ hostTotal: 0, hostBusy: 0, own: 0 }, { hostTotal: 1000, hostBusy: 600, own: 100 })).toBe(
      0.5,
    );
    // The run's own counted more than the host's busy time (reaped children read at another
    // moment): never below none.
    expect(otherCpuShare({ hostTotal: 0, hostBusy: 0, own: 0 }, { hostTotal: 1000, hostBusy: 50, own: 80 })).toBe(0);
    // No time passed on the host's clock: nothing to say.
    expect(otherCpuShare({ hostTotal: 10, hostBusy: 0, own: 0 }, { hostTotal: 10, hostBusy: 0, own: 0 })).toBeNull();
  });

  it('sees a neighbour that keeps a core busy while the run waits', async () => {
    // An idle process stands for the run's Chrome; a child spinning for a second is the neighbour.
    const chrome = spawn('sleep', ['5']);
    const neighbour = spawn(process.execPath, ['-e', 'const t = Date.now() + 1000; while (Date.now() < t);']);
    try {
      const watch = await watchOtherCpu(chrome.pid!);
      await once(neighbour, 'exit');
      const share = await watch.stop();
      // Most of one core of this host for the second, at least (more when the host has other work).
      expect(share).toBeGreaterThanOrEqual(Math.min(0.9, 0.6 / cpus().length));
    } finally {
      chrome.kill();
      neighbour.kill();
    }
  });
});
