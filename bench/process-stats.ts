/** What /proc says of a process the benches measure (Linux only, as the benches run). */
import { readFile, writeFile } from 'node:fs/promises';

/** The process's CPU time so far (user + system), from /proc: reading it costs the process nothing. */
export async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  // utime and stime, fields 14 and 15 of stat(5), in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The process's peak RSS (VmHWM) since it started, or since the last resetPeakRss. */
export async function peakRssMb(pid: number): Promise<number> {
  return Number(/VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** Resets VmHWM to the current RSS (proc(5), clear_refs "5"), so each level reports its own peak. */
export async function resetPeakRss(pid: number): Promise<void> {
  await writeFile(`/proc/${pid}/clear_refs`, '5');
}

/** The process's resident memory now (VmRSS). */
export async function rssMb(pid: number): Promise<number> {
  return Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}
