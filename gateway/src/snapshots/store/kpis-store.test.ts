import { describe, expect, it } from 'vitest';
import type { KpiRecord } from '@perfwatch/common';
import type { ProjectRecord } from '../../projects/store/projects-store.ts';
import { fieldHistoryId, fieldHistoryKpis, placedKpis } from './kpis-store.ts';

const kpi = (name: string): KpiRecord => ({ section: 'LIGHTHOUSE', kpi: name, data: { value: 1 } });

const project: ProjectRecord = {
  id: 'p1',
  userId: 'u1',
  url: 'https://shop.example/',
  domain: 'shop.example',
  locations: ['london', 'tokyo'],
  defaultLocation: 'tokyo',
  runs: 1,
  schedule: null,
  budgets: { budgets: {}, maxRegression: {} },
  auth: null,
  devices: null,
  crux: null,
  siteId: null,
  flow: null,
  createdAt: new Date('2026-01-01T00:00:00Z'),
};

describe("a KPI record's place", () => {
  it("puts each cell's records at the snapshot's place, in the cells' order", () => {
    const date = new Date('2026-06-01T10:00:00Z');
    const place = { snapshotId: 's1', projectId: 'p1', userId: 'u1', date, domain: 'shop.example', url: project.url };
    const placed = placedKpis({ ...place, updateType: 'manual' }, [
      { device: 'mobile', location: 'london', kpis: [kpi('fcp'), kpi('lcp')] },
      { device: 'desktop', location: 'tokyo', kpis: [kpi('fcp')] },
    ]);
    expect(placed.map((k) => [k.device, k.location, k.kpi, k.snapshotId, k.updateType])).toEqual([
      ['mobile', 'london', 'fcp', 's1', 'manual'],
      ['mobile', 'london', 'lcp', 's1', 'manual'],
      ['desktop', 'tokyo', 'fcp', 's1', 'manual'],
    ]);
  });

  it("hangs a project's field-data history on no snapshot, at its default location, as scheduled", () => {
    const week = new Date('2026-05-03T00:00:00Z');
    const [record] = fieldHistoryKpis(project, [{ date: week, device: 'mobile', kpis: [kpi('lcp')] }]);
    expect(record).toEqual({
      snapshotId: fieldHistoryId('p1'),
      projectId: 'p1',
      userId: 'u1',
      date: week,
      domain: 'shop.example',
      url: project.url,
      updateType: 'scheduled',
      device: 'mobile',
      location: 'tokyo',
      section: 'LIGHTHOUSE',
      kpi: 'lcp',
      data: { value: 1 },
    });
  });
});
