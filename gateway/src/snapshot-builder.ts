import { cruxKpis, extractElementCount, extractRunMetrics, lighthouseKpis, pageSourceKpis, savingsKpis, securityKpis, type Device, type Location } from '@perfwatch/common';
import type { FieldData } from './crux/crux-client.ts';
import { judgeRuns, representativeRunIndex, type MeasuredRun } from './run-verdicts.ts';
import type { LocationSnapshot } from './store/store.ts';

/**
 * Turns the successful runs of one (device, location) into its snapshot entry: every run's
 * key metrics, conditions and verdict, the representative run's full result, and the KPI
 * records taken from it.
 */
export function buildLocationSnapshot(device: Device, location: Location, successes: readonly MeasuredRun[]): LocationSnapshot {
  if (successes.length === 0) throw new Error(`no successful run for ${device}/${location}`);
  // Re-tests have run indexes past the first round's, so they come after the runs they re-test.
  const ordered = [...successes].sort((a, b) => a.runIndex - b.runIndex);
  const verdicts = judgeRuns(ordered);
  const runs = ordered.map((r, i) => {
    const target = r.retestOfRunIndex === undefined ? -1 : ordered.findIndex((o) => o.runIndex === r.retestOfRunIndex);
    return { ...extractRunMetrics(r.lhr), agentId: r.agentId, ...(r.conditions ?? {}), ...verdicts[i]!, ...(target >= 0 ? { retestOf: target + 1 } : {}) };
  });
  const index = representativeRunIndex(runs);
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
    kpis: [...entry.kpis, ...cruxKpis(fieldData.url, fieldData.origin)],
  };
}
