import type { KpiRow, KpisStore, OverviewFilter } from '../../gateway/src/snapshots/store/kpis-store.ts';

/** A KPI row with its data parsed, as tests compare it. */
export type ParsedKpiRow = Omit<KpiRow, 'dataJson'> & { data: unknown };

/** Every KPI row a filter matches, out of the store's batches, with `data` parsed. */
export async function kpiRows(store: Pick<KpisStore, 'streamKpis'>, filter: OverviewFilter): Promise<ParsedKpiRow[]> {
  const rows: ParsedKpiRow[] = [];
  for await (const batch of store.streamKpis(filter))
    for (const { dataJson, ...row } of batch) rows.push({ ...row, data: JSON.parse(dataJson) });
  return rows;
}
