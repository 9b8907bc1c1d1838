import { describe, expect, it } from 'vitest';
import type { UpdateStatusView } from '@perfwatch/common';
import { updateProgress } from './update-progress.ts';

const status = (state: UpdateStatusView['status'], done: number[]): UpdateStatusView => ({
  id: '6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f',
  url: 'https://shop.example/',
  status: state,
  updateType: 'ci',
  devices: ['mobile'],
  locations: ['london', 'tokyo'],
  date: null,
  reason: null,
  attempts: state === 'queued' ? 0 : 1,
  missing: [],
  progress:
    done.length > 0
      ? [
          { device: 'mobile', location: 'london', done: done[0]!, total: 3 },
          { device: 'mobile', location: 'tokyo', done: done[1]!, total: 3 },
        ]
      : [],
  createdAt: '2026-11-22T10:00:00.000Z',
  updatedAt: '2026-11-22T10:00:00.000Z',
});

function capture(isTTY: boolean) {
  const written: string[] = [];
  let t = 0;
  const progress = updateProgress({ isTTY, write: (text: string) => written.push(text) }, () => (t += 1000));
  return { progress, written };
}

describe('updateProgress', () => {
  it('writes a CI log line per change of state or of runs finished, never the same line twice', () => {
    const { progress, written } = capture(false);
    for (const s of [
      status('queued', []),
      status('queued', []),
      status('running', [0, 0]),
      status('running', [1, 0]),
      status('running', [1, 0]),
      status('running', [3, 3]),
      status('done', [3, 3]),
    ])
      progress.show(s);
    progress.end();
    expect(written.map((line) => line.replace(/ \(\d+ s\)\n$/, ''))).toEqual([
      'update 6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f mobile × london, tokyo: queued',
      'update 6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f mobile × london, tokyo: running · runs mobile/london 0/3, mobile/tokyo 0/3',
      'update 6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f mobile × london, tokyo: running · runs mobile/london 1/3, mobile/tokyo 0/3',
      'update 6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f mobile × london, tokyo: running · runs mobile/london 3/3, mobile/tokyo 3/3',
      'update 6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f mobile × london, tokyo: done',
    ]);
  });

  it('redraws one line on a terminal and ends it with a newline', () => {
    const { progress, written } = capture(true);
    progress.show(status('running', [2, 1]));
    progress.show(status('running', [2, 1]));
    progress.end();
    // Redrawn at every poll, if only for the seconds.
    expect(written.slice(0, 2)).toEqual(
      [1, 2].map(
        (s) =>
          `\r\x1b[Kupdate 6f1c2d4e mobile × london, tokyo: running · runs mobile/london 2/3, mobile/tokyo 1/3 · ${s} s`,
      ),
    );
    expect(written.at(-1)).toBe('\n');
  });
});
