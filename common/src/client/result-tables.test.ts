import { describe, expect, it } from 'vitest';
import { auditResultTable } from './result-tables.ts';

describe('auditResultTable', () => {
  it('gives a cell that was not measured its own row, with the reason', () => {
    const text = auditResultTable({ missing: [{ device: 'mobile', location: 'tokyo', reason: 'NO_RESPONDERS: no agent serves tokyo' }] });
    const row = text.split('\n').find((line) => line.includes('tokyo'));
    expect(row).toMatch(/mobile\s+│\s+tokyo\s+│\s+not measured: NO_RESPONDERS: no agent serves tokyo/);
  });
});
