import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ChromeProfile {
  dir: string;
  /** Every live process naming the profile directory (browser and helpers). */
  pids: number[];
  /** The browser processes among them (no `--type=`): one per running Chrome. */
  browsers: number[];
}

/** Profile directories of the Chromes launched by the agent process `ownerPid`, and the processes using each. */
export async function chromesOf(ownerPid: number): Promise<ChromeProfile[]> {
  const found: ChromeProfile[] = [];
  for (const name of (await readdir(tmpdir())).filter((n) => n.startsWith('perfwatch-chrome-'))) {
    const dir = join(tmpdir(), name);
    if ((await readFile(join(dir, 'perfwatch-owner.pid'), 'utf8').catch(() => '')) !== String(ownerPid)) continue;
    found.push({ dir, ...(await processesUsing([dir])) });
  }
  return found;
}

/**
 * Live (not zombie) processes whose command line names one of `dirs`, even removed ones. A
 * browser process is one without `--type=` whose parent is not one of them: a helper Chrome has
 * just forked carries its parent's command line until it execs, and is no second browser.
 */
export async function processesUsing(dirs: readonly string[]): Promise<{ pids: number[]; browsers: number[] }> {
  const found: Array<{ pid: number; ppid: number; typed: boolean }> = [];
  for (const entry of (await readdir('/proc')).filter((e) => /^\d+$/.test(e))) {
    // Chrome rewrites its process title: the arguments may be one space-separated string.
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (!dirs.some((dir) => cmdline.includes(dir)) || /\) Z /.test(stat)) continue;
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may contain spaces, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    found.push({ pid: Number(entry), ppid, typed: /(^|[\s\0])--type=/.test(cmdline) });
  }
  const pids = found.map((p) => p.pid);
  const ours = new Set(pids);
  const browsers = found.filter((p) => !p.typed && !ours.has(p.ppid)).map((p) => p.pid);
  return { pids, browsers };
}

/** One line per process: pid, parent, state and the start of its command line (for failure messages). */
export async function describeProcesses(pids: readonly number[]): Promise<string> {
  const lines = await Promise.all(
    pids.map(async (pid) => {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return `pid ${pid} ppid ${ppid} state ${state}: ${cmdline.slice(0, 160)}`;
    }),
  );
  return lines.join('; ');
}
