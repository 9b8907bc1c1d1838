import { Binary, type ObjectId } from 'mongodb';
import { storedStep, type NewLocationSnapshot } from './snapshots-store.ts';

/** A cell of a snapshot as its `results` document, at its snapshot, project and date. */
export async function resultDocument(
  r: NewLocationSnapshot,
  place: { snapshotId: ObjectId; projectId: ObjectId; date: Date },
): Promise<Record<string, unknown>> {
  return {
    ...place,
    device: r.device,
    location: r.location,
    median: r.median,
    runs: r.runs,
    elementCount: r.elementCount,
    crux: r.crux,
    ...(r.checks ? { checks: r.checks } : {}),
    ...(r.artifacts ? { artifacts: r.artifacts } : {}),
    lighthouseVersion: r.lighthouseVersion,
    // Stored compressed and opaque: ~6× smaller, and Lighthouse's own keys (some contain
    // dots) never meet a server's field-name rules. From an agent of v1.5, as it sent it.
    lighthouse: new Binary(await r.lighthouse.gzip()),
    // A flow's steps, and their further results (the first step's is `lighthouse`).
    ...(r.steps
      ? {
          steps: r.steps.map(storedStep),
          stepResults: await Promise.all(r.steps.slice(1).map(async (s) => new Binary(await s.lighthouse.gzip()))),
        }
      : {}),
  };
}
