/**
 * How long a test waits for `items` more of something it has just seen take `perItemMs` each on
 * this machine, in this run: machines of this kind differ about 2× in speed and share their cores
 * with the suite's other files, so a wait is derived from what the run measured, with `slack`
 * times the room, and never shorter than `floorMs`.
 */
export function measuredWait(perItemMs: number, items: number, { slack = 3, floorMs = 30_000 } = {}): number {
  if (!Number.isFinite(perItemMs) || perItemMs <= 0) throw new Error(`no time measured (${perItemMs} ms)`);
  return Math.max(floorMs, Math.round(perItemMs * items * slack));
}
