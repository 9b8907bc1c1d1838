import { assessCoreWebVitals, extractElementCount, extractRunMetrics, lighthouseKpis, medianRunIndex, pageSourceKpis, savingsKpis, securityKpis, type AuditRunResult, type Device, type Location } from '@perfwatch/common';
import type { FieldData } from './crux/crux-client.ts';
import type { LocationSnapshot } from './store/store.ts';

/**
 * Turns the successful runs of one (device, location) into its snapshot entry: every run's
 * key metrics, the representative run's full result, and the KPI records taken from it.
 */
export function buildLocationSnapshot(device: Device, location: Location, successes: readonly AuditRunResult[]): LocationSnapshot {
  if (successes.length === 0) throw new Error(`no successful run for ${device}/${location}`);
  const ordered = [...successes].sort((a, b) => a.runIndex - b.runIndex);
  const runs = ordered.map((r) => ({ ...extractRunMetrics(r.lhr), agentId: r.agentId, ...(r.conditions ?? {}) }));
  const index = medianRunIndex(runs);
  const representative = ordered[index]!;
  const lighthouse = representative.lhr;
  const security = representative.security ?? ordered.find((r) => r.security)?.security;
  return {
    device,
    location,
    median: index + 1,
    runs,
    lighthouse,
    // Field data arrives with the agent's CrUX client; until then there is none to show.
    crux: { url: null },
    elementCount: extractElementCount(lighthouse),
    kpis: [...lighthouseKpis(lighthouse), ...pageSourceKpis(lighthouse), ...savingsKpis(lighthouse), ...(security ? securityKpis(security) : [])],
  };
}

/**
 * Adds CrUX field data to a snapshot entry: the records under `crux`, and the CRUX KPI records
 * (the Core Web Vitals assessment of the page and of its origin). Without field data (CrUX not
 * configured, or not reachable) nothing is added: no assessment is ever invented.
 */
export function withFieldData(entry: LocationSnapshot, fieldData: FieldData | null): LocationSnapshot {
  if (!fieldData) return entry;
  return {
    ...entry,
    crux: { url: fieldData.url, ...(fieldData.origin ? { origin: fieldData.origin } : {}) },
    kpis: [...entry.kpis, { section: 'CRUX', kpi: 'url', data: assessCoreWebVitals(fieldData.url) }, { section: 'CRUX', kpi: 'origin', data: assessCoreWebVitals(fieldData.origin) }],
  };
}
