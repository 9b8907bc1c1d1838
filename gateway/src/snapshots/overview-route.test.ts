import { describe, expect, it } from 'vitest';
import { overviewRecordSchema } from '@perfwatch/common';
import { overviewRecordJson } from './overview-route.ts';
import type { KpiRow } from '../store/store.ts';

const row = (over: Partial<KpiRow>): KpiRow => ({
  date: new Date('2026-03-04T05:06:07.890Z'),
  domain: 'shop.example',
  url: 'https://shop.example/a?b="c"&d=\\e',
  device: 'mobile',
  location: 'sao_paulo',
  updateType: 'ci',
  section: 'LIGHTHOUSE',
  kpi: 'performance',
  dataJson: JSON.stringify({ score: 93, lcp: 2100.5, inp: null, note: 'ü "quoted"\n' }),
  ...over,
});

describe('overviewRecordJson', () => {
  it('writes the same text as JSON.stringify of the record, for object and string data', () => {
    for (const r of [
      row({}),
      row({ section: 'CRUX', kpi: 'url_lcp_p75', dataJson: JSON.stringify('2300'), updateType: 'scheduled' }),
    ]) {
      const text = overviewRecordJson(r);
      const record = {
        date: '2026-03-04T05:06:07',
        domain: r.domain,
        url: r.url,
        device: r.device,
        location: r.location,
        updateType: r.updateType === 'ci' ? 'Ci' : 'Scheduled',
        section: r.section,
        kpi: r.kpi,
        data: JSON.parse(r.dataJson) as unknown,
      };
      expect(text).toBe(JSON.stringify(record));
      expect(overviewRecordSchema.parse(JSON.parse(text))).toEqual(record);
    }
  });

  it('writes a revision after kpi when the snapshot had one, and none when it had none', () => {
    const revision = { commit: 'abc1234', branch: 'main', pullRequest: 7 };
    const withOne = JSON.parse(overviewRecordJson(row({ revision }))) as Record<string, unknown>;
    expect(Object.keys(withOne).slice(-2)).toEqual(['revision', 'data']);
    expect(overviewRecordSchema.parse(withOne).revision).toEqual(revision);
    expect(JSON.parse(overviewRecordJson(row({ revision: undefined })))).not.toHaveProperty('revision');
  });
});
