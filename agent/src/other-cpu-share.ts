import { readdir, readFile } from 'node:fs/promises';

/**
 * Linux's unit of CPU time in /proc (USER_HZ), 100 on every architecture Chrome runs on; the
 * kernel scales to it whatever its own tick rate.
 */
const TICKS_PER_SECOND = 100;

interface CpuTicks {
  /** The host's CPU time (all cores) and the part of it that was busy, in ticks. */
  hostTotal: number;
  hostBusy: number;
  /** The run's own: its Chrome's processes, those they reaped, and the thread running Lighthouse. */
  own: number;
}

/**
 * What share of the host's CPU a run did not have to itself. Lighthouse's benchmark index is a
 * single-threaded loop: on a machine of two cores with one taken by a neighbour, it reads the
 * same as on an idle one (measured: 3,376–3,698 against 3,445–3,895), while the run's Chrome,
 * whose threads want more than one core, waits. So the agent measures the neighbours
 * themselves: the host's busy time (/proc/stat) less the run's own (its Chrome's processes from
 * /proc/PID/stat, with what they reaped, and this thread's CPU time), over the host's CPU time.
 * The host is what /proc shows: in a container without its own /proc/stat, the node's.
 *
 * Written here rather than taken from a library: the packages that read /proc (pidusage,
 * systeminformation) give a process's share, not a tree's with its reaped children, nor the
 * calling thread's.
 */
export async function watchOtherCpu(chromePid: number): Promise<{ stop(): Promise<number | null> }> {
  const before = await cpuTicks(chromePid).catch(() => null);
  return {
    async stop() {
      const after = before && (await cpuTicks(chromePid).catch(() => null));
      if (!before || !after) return null;
      return otherCpuShare(before, after);
    },
  };
}

/** The share (0–1, two decimals) of the host's CPU time between two readings that went to others. */
export function otherCpuShare(before: CpuTicks, after: CpuTicks): number | null {
  const total = after.hostTotal - before.hostTotal;
  if (total <= 0) return null;
  const others = after.hostBusy - before.hostBusy - (after.own - before.own);
  return Math.round(Math.min(1, Math.max(0, others / total)) * 100) / 100;
}

async function cpuTicks(chromePid: number): Promise<CpuTicks> {
  const [host, chrome] = await Promise.all([hostTicks(), treeTicks(chromePid)]);
  const thread = process.threadCpuUsage();
  return { ...host, own: chrome + ((thread.user + thread.system) / 1e6) * TICKS_PER_SECOND };
}

/** The first line of /proc/stat: user nice system idle iowait irq softirq steal (guest time is inside user). */
async function hostTicks(): Promise<Pick<CpuTicks, 'hostTotal' | 'hostBusy'>> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0]!;
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) throw new Error('unreadable /proc/stat');
  const hostTotal = fields.reduce((sum, n) => sum + n, 0);
  // A hypervisor's steal is CPU a neighbour took: busy, as far as the run is concerned.
  return { hostTotal, hostBusy: hostTotal - fields[3]! - fields[4]! };
}

/** CPU ticks of `root` and its descendants, each with the children it reaped (utime, stime, cutime, cstime). */
async function treeTicks(root: number): Promise<number> {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  await Promise.all(
    pids.map(async (pid) => {
      const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
      // The command name, in parentheses, may hold spaces: fields are counted after its end.
      const rest = text?.slice(text.lastIndexOf(')') + 2).split(' ');
      if (!rest || rest.length < 15) return;
      // After the name: state, ppid, … utime (14th field of the line) is rest[11].
      const ticks = Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
      stats.set(Number(pid), { ppid: Number(rest[1]), ticks });
    }),
  );
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of stats) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  let ticks = 0;
  for (const queue = [root]; queue.length > 0;) {
    const pid = queue.pop()!;
    ticks += stats.get(pid)?.ticks ?? 0;
    queue.push(...(children.get(pid) ?? []));
  }
  return ticks;
}
