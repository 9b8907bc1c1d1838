import type { UpdateStatusView } from '@perfwatch/common';

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Shows where a waited-for update is. On a terminal one line is redrawn in place (status,
 * attempt, elapsed seconds); in a CI log, which keeps every byte, a line per change of state.
 */
export function updateProgress(stream: ProgressStream, now: () => number = Date.now) {
  const started = now();
  let last = '';
  return {
    show(status: UpdateStatusView): void {
      const state = `${status.status}${status.attempts > 1 ? ` (attempt ${status.attempts})` : ''}${status.reason && status.status !== 'done' ? `: ${status.reason}` : ''}`;
      const where = `${status.devices.join('+')} × ${status.locations.join(', ')}`;
      // Runs finished per device/location, once the update runs: "mobile/london 2/3".
      const runs =
        status.status === 'running' && status.progress.length > 0
          ? ` · runs ${status.progress.map((p) => `${p.device}/${p.location} ${p.done}/${p.total}`).join(', ')}`
          : '';
      if (stream.isTTY) {
        stream.write(
          `\r\x1b[Kupdate ${status.id.slice(0, 8)} ${where}: ${state}${runs} · ${Math.round((now() - started) / 1000)} s`,
        );
      } else if (state + runs !== last) {
        stream.write(`update ${status.id} ${where}: ${state}${runs} (${Math.round((now() - started) / 1000)} s)\n`);
      }
      last = state + runs;
    },
    end(): void {
      if (stream.isTTY && last) stream.write('\n');
    },
  };
}
