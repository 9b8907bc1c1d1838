import type { ArtifactKind } from '@perfwatch/common';
import type { RunArtifacts } from './artifact-capture.ts';

export interface ArtifactCacheOptions {
  /** Runs kept at most (the most recent). */
  maxRuns: number;
  /** Gzip bytes kept at most over all runs; the oldest go first. */
  maxBytes: number;
  /** A run's artifacts are dropped this long after it ended, pulled or not. */
  ttlMs: number;
  now?: () => number;
}

/** Defaults: a cell's runs (3–5) of several cells in flight, at most 256 MB, 15 minutes. */
const ARTIFACT_CACHE_DEFAULTS: ArtifactCacheOptions = {
  maxRuns: 32,
  maxBytes: 256 * 1024 * 1024,
  ttlMs: 15 * 60_000,
};

interface Entry {
  artifacts: RunArtifacts;
  bytes: number;
  at: number;
}

export interface ArtifactCache {
  keep(jobId: string, artifacts: RunArtifacts): void;
  take(jobId: string, kind: ArtifactKind): RunArtifacts[ArtifactKind] | undefined;
  readonly bytes: number;
  readonly runs: number;
}

/**
 * The artifacts of this agent's recent runs, by job id, until the gateway has chosen each
 * cell's median run and pulled it: each run is a job of its own, maybe on another agent, so
 * only the gateway knows which run is the median, and only after the cell's last run. Bounded
 * in runs, bytes and age; a pulled kind is dropped (it is sent once).
 */
export function createArtifactCache(options: Partial<ArtifactCacheOptions> = {}): ArtifactCache {
  const { maxRuns, maxBytes, ttlMs, now = Date.now } = { ...ARTIFACT_CACHE_DEFAULTS, ...options };
  // A Map iterates in insertion order: the first entry is the oldest.
  const entries = new Map<string, Entry>();
  let total = 0;
  const drop = (jobId: string) => {
    const entry = entries.get(jobId);
    if (!entry) return;
    total -= entry.bytes;
    entries.delete(jobId);
  };
  const expire = () => {
    for (const [jobId, entry] of entries) if (now() - entry.at > ttlMs) drop(jobId);
  };
  return {
    keep(jobId, artifacts) {
      drop(jobId);
      const bytes = Object.values(artifacts).reduce((sum, a) => sum + (a?.gzip.byteLength ?? 0), 0);
      if (bytes === 0 || bytes > maxBytes) return;
      expire();
      while (entries.size >= maxRuns || total + bytes > maxBytes) drop(entries.keys().next().value!);
      entries.set(jobId, { artifacts, bytes, at: now() });
      total += bytes;
    },
    take(jobId, kind) {
      expire();
      const entry = entries.get(jobId);
      const artifact = entry?.artifacts[kind];
      if (!entry || !artifact) return undefined;
      delete entry.artifacts[kind];
      entry.bytes -= artifact.gzip.byteLength;
      total -= artifact.gzip.byteLength;
      if (entry.bytes === 0) entries.delete(jobId);
      return artifact;
    },
    get bytes() {
      return total;
    },
    get runs() {
      return entries.size;
    },
  };
}
