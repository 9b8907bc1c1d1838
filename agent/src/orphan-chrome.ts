import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';

/** Profile directories of the Chromes agents launch: `<tmp>/perfwatch-chrome-XXXXXX`. */
export const PROFILE_PREFIX = 'perfwatch-chrome-';
const OWNER_FILE = 'perfwatch-owner.pid';

/** Marks a profile directory with the pid of the agent that launched its Chrome. */
export async function markOwner(profileDir: string, pid = process.pid): Promise<void> {
  await writeFile(join(profileDir, OWNER_FILE), String(pid));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether a process still runs; a zombie waiting for its parent to reap it does not. */
async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat !== null && !/\) Z /.test(stat);
}

/**
 * The processes of a Chrome: those whose command line mentions `profileDir` (the browser and
 * most helpers name it as --user-data-dir), and every descendant of those (some utility
 * processes do not name it, but are children of the browser or its zygote).
 */
async function processesUsing(profileDir: string): Promise<number[]> {
  const children = new Map<number, number[]>();
  const seeds: number[] = [];
  const entries = await readdir('/proc').catch(() => [] as string[]);
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const ppid = Number(/\) \S+ (\d+)/.exec(stat)?.[1]);
    if (Number.isInteger(ppid)) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').some((arg) => arg.includes(profileDir))) seeds.push(pid);
  }
  const all = new Set<number>();
  const visit = (pid: number) => {
    if (all.has(pid)) return;
    all.add(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  seeds.forEach(visit);
  return [...all];
}

/**
 * Kills the Chromes of agents that died without cleaning up (SIGKILL, OOM kill, a crash): a
 * profile directory whose owner pid is gone belongs to an orphan. Chromes of live agents are
 * never touched, whoever they belong to. Linux only (/proc); elsewhere it finds nothing.
 */
export async function reapOrphanedChromes(logger: Logger, dir = tmpdir()): Promise<number> {
  let reaped = 0;
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(PROFILE_PREFIX))) {
    const profileDir = join(dir, name);
    const owner = Number(await readFile(join(profileDir, OWNER_FILE), 'utf8').catch(() => NaN));
    if (!Number.isInteger(owner) || alive(owner)) continue;
    const pids = await processesUsing(profileDir);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        reaped++;
      } catch {
        // Already gone.
      }
    }
    // Dying processes may still write into the profile; remove it once they are gone.
    for (let i = 0; i < 50 && (await Promise.all(pids.map(running))).some(Boolean); i++) await sleep(100);
    await rm(profileDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    // A process that was exiting as we looked may still have written into it: look again.
    await sleep(200);
    await rm(profileDir, { recursive: true, force: true });
    logger.warn({ profileDir, owner }, 'removed the Chrome of an agent that died');
  }
  return reaped;
}
