import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { removeExpiredArtifacts } from './artifact-retention.ts';

function loggerLines() {
  const lines: Array<{ msg: string; level: number }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('artifact retention', () => {
  it('removes what was written more than ARTIFACT_RETENTION_DAYS and a day (the longest update) before the pass', async () => {
    const cutoffs: Date[] = [];
    const store = { removeOlderThan: async (cutoff: Date) => (cutoffs.push(cutoff), 3) };
    const { logger, lines } = loggerLines();
    await removeExpiredArtifacts({ store, days: 30 }, logger, new Date('2026-03-31T12:00:00Z'));
    expect(cutoffs).toEqual([new Date('2026-02-28T12:00:00Z')]);
    expect(lines.map((line) => line.msg)).toEqual(['deleted artifacts past retention']);
  });

  it('logs an artifact store that is down and lets the pass go on', async () => {
    const store = {
      removeOlderThan: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:8333')),
    };
    const { logger, lines } = loggerLines();
    await removeExpiredArtifacts({ store, days: 30 }, logger, new Date());
    expect(lines).toMatchObject([
      { level: 40, msg: 'could not delete artifacts past retention; trying again next pass' },
    ]);
  });
});
