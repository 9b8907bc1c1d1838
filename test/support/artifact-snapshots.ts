import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import {
  ARTIFACT_CONTENT_TYPES,
  ARTIFACT_MAX_BYTES,
  artifactRequestLineSchema,
  extractRunMetrics,
  type ArtifactKind,
  type CellArtifacts,
  type Device,
  type LighthouseResult,
  type Location,
} from '@perfwatch/common';
import type { NewLocationSnapshot, ProjectRecord, Store } from '@perfwatch/gateway';
import type { ArtifactStore } from '../../gateway/src/artifacts/store/artifact-store.ts';
import { loadLhr } from './lhr-fixtures.ts';
import { newCell } from './new-cells.ts';

/**
 * Snapshots whose cells have artifacts, written as the gateway writes them (no agent, no
 * Lighthouse): the cell's states in the snapshot, and the requests NDJSON and trace, gzipped, in
 * the artifact store under the key the gateway reads ({orgId: the project's owner, projectId,
 * snapshotId: the update's id, device, location, kind}). The lines are made as the agent makes
 * them (agent/src/artifact-capture.ts): @perfwatch/common's line schema, then the end line.
 */

/** A third party's script, its entity and what it costs, added to a real Lighthouse result. */
export const AD_SCRIPT = {
  url: 'https://ads.example/tag.js',
  entity: 'Ads Co',
  transferSize: 48_213,
  mainThreadTime: 312.5,
  longTaskMs: 180,
} as const;

/** The fixture site's result, its hero image's request the LCP element's; with the ad script when `withAd`. */
export function shopResult(device: Device, withAd: boolean): LighthouseResult {
  const lhr = loadLhr(device, 1);
  if (!withAd) return lhr;
  const items = (audit: string) => (lhr.audits[audit]!.details as { items: unknown[] }).items;
  (lhr['entities'] as unknown[]).push({
    name: AD_SCRIPT.entity,
    origins: [new URL(AD_SCRIPT.url).origin],
    isFirstParty: false,
    isUnrecognized: false,
  });
  items('network-requests').push({
    url: AD_SCRIPT.url,
    protocol: 'h2',
    rendererStartTime: 120,
    networkRequestTime: 131.5,
    networkEndTime: 412.25,
    transferSize: AD_SCRIPT.transferSize,
    resourceSize: 151_000,
    statusCode: 200,
    mimeType: 'text/javascript',
    resourceType: 'Script',
    priority: 'Low',
    experimentalFromMainFrame: true,
    entity: AD_SCRIPT.entity,
  });
  items('third-parties-insight').push({
    entity: AD_SCRIPT.entity,
    transferSize: AD_SCRIPT.transferSize,
    mainThreadTime: AD_SCRIPT.mainThreadTime,
  });
  items('long-tasks').push({ url: AD_SCRIPT.url, duration: AD_SCRIPT.longTaskMs, startTime: 900 });
  return lhr;
}

/** The request lines of a result's `network-requests`, the request of `lcpUrl` marked `lcp`. */
export function requestLinesOf(lhr: LighthouseResult, lcpUrl: string): object[] {
  const items = (lhr.audits['network-requests']!.details as { items: unknown[] }).items;
  return items.map((item) => {
    const line = artifactRequestLineSchema.parse(item);
    return line.url === lcpUrl ? { ...line, lcp: true } : line;
  });
}

/** `count` requests of a big page: its document, then scripts and images from seven CDNs. */
export function bigPageLines(count: number): object[] {
  return Array.from({ length: count }, (_, i) => {
    const cdn = i === 0 ? null : i % 7;
    const start = 5 + i * 1.7;
    return {
      url: cdn === null ? 'https://big.example/' : `https://cdn${cdn}.example/asset-${i}.${i % 2 ? 'js' : 'png'}`,
      rendererStartTime: start,
      networkRequestTime: start + 2,
      networkEndTime: start + 40 + (i % 50),
      transferSize: 1000 + (i % 300),
      resourceSize: 2000 + (i % 300),
      statusCode: 200,
      mimeType: i % 2 ? 'text/javascript' : 'image/png',
      resourceType: cdn === null ? 'Document' : i % 2 ? 'Script' : 'Image',
      priority: 'Low',
      entity: cdn === null ? 'big.example' : `CDN ${cdn}`,
      ...(i === 4000 ? { lcp: true } : {}),
    };
  });
}

/** The requests artifact's text: a line a request, then the end line (`requests` the run's count). */
export function requestsNdjson(lines: readonly object[], requests = lines.length): string {
  const end = { end: true, requests, written: lines.length, truncated: requests > lines.length };
  return [...lines, end].map((line) => `${JSON.stringify(line)}\n`).join('');
}

/** A cell to seed: its result, and each artifact kept (its text) or only stated (missing, or lost to retention). */
export interface SeededCell {
  device: Device;
  location: Location;
  lhr: LighthouseResult;
  /** Stored: the text kept (and whether the agent cut it); stated: what the snapshot says without a file. */
  artifacts: Partial<
    Record<ArtifactKind, { text: string; truncated?: boolean } | { state: CellArtifacts['requests'] }>
  >;
}

/** One snapshot of `project` at `date`, its cells' artifacts in `artifacts` as the gateway keeps them. */
export async function seedArtifactSnapshot(
  { store, artifacts }: { store: Store; artifacts: ArtifactStore },
  project: ProjectRecord,
  { updateId, date, cells }: { updateId: string; date: Date; cells: readonly SeededCell[] },
): Promise<void> {
  const results: NewLocationSnapshot[] = [];
  for (const cell of cells) {
    const states: CellArtifacts = {};
    for (const [kind, given] of Object.entries(cell.artifacts) as [
      ArtifactKind,
      SeededCell['artifacts'][ArtifactKind],
    ][]) {
      if (!given) continue;
      if ('state' in given) {
        states[kind] = given.state;
        continue;
      }
      const gzip = gzipSync(given.text);
      const key = {
        orgId: project.userId,
        projectId: project.id,
        snapshotId: updateId,
        device: cell.device,
        location: cell.location,
        kind,
      };
      const options = {
        maxBytes: ARTIFACT_MAX_BYTES[kind],
        contentType: ARTIFACT_CONTENT_TYPES[kind],
        contentEncoding: 'gzip' as const,
      };
      const { bytes } = await artifacts.put(key, Readable.from([gzip]), options);
      states[kind] = { state: 'stored', bytes, ...(given.truncated ? { truncated: true } : {}) };
    }
    results.push(
      newCell({
        device: cell.device,
        location: cell.location,
        median: 1,
        runs: [{ ...extractRunMetrics(cell.lhr), agentId: 'seeded' }],
        lighthouse: cell.lhr,
        crux: { url: null },
        elementCount: null,
        kpis: [],
        artifacts: states,
      }),
    );
  }
  await store.saveSnapshot({ project, updateId, date, updateType: 'manual', results });
}
