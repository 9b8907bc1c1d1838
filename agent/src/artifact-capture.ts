import { ARTIFACT_MAX_BYTES, artifactRequestLineSchema, type ArtifactKind } from '@perfwatch/common';
import { boundedGzip, type GzippedArtifact } from './artifact-gzip.ts';
import { lcpImageUrl } from './lcp-request.ts';

/** What a run leaves of its heavy evidence, each kind gzipped and bounded (ARTIFACT_MAX_BYTES). */
export type RunArtifacts = Partial<Record<ArtifactKind, GzippedArtifact>>;

const itemsOf = (lhr: { audits?: Record<string, { details?: unknown } | undefined> }): unknown[] | null => {
  const details = lhr.audits?.['network-requests']?.details as { items?: unknown } | undefined;
  return Array.isArray(details?.items) ? details.items : null;
};

const withoutFragment = (url: string) => url.split('#', 1)[0];

/**
 * The requests artifact: NDJSON, one request a line in Lighthouse's order, then one line
 * `{"end":true,"requests":N,"written":M,"truncated":bool}` so a reader knows whether it has all.
 * The first request of `lcpUrl` (the LCP element's image, lcp-request.ts) says `"lcp":true`.
 */
export async function captureRequests(
  lhr: { audits?: Record<string, { details?: unknown } | undefined> },
  maxBytes = ARTIFACT_MAX_BYTES.requests,
  lcpUrl: string | null = null,
): Promise<GzippedArtifact | null> {
  const items = itemsOf(lhr);
  if (!items) return null;
  const parsed = items.map((item) => artifactRequestLineSchema.parse(item ?? {}));
  const lcp =
    lcpUrl === null
      ? undefined
      : parsed.find((line) => line.url && withoutFragment(line.url) === withoutFragment(lcpUrl));
  if (lcp) lcp.lcp = true;
  const lines = parsed.map((line) => `${JSON.stringify(line)}\n`);
  return boundedGzip(
    lines,
    lines.length,
    maxBytes,
    (truncated, written) => `${JSON.stringify({ end: true, requests: items.length, written, truncated })}\n`,
  );
}

/**
 * The trace artifact: `{"traceEvents":[…],"metadata":{…}}` as Chrome DevTools and Perfetto
 * open it. Events are in Lighthouse's (time) order, so a cut trace keeps the page's start; its
 * metadata says `perfwatchTruncated` and how many events it kept.
 */
export async function captureTrace(
  trace: unknown,
  maxBytes = ARTIFACT_MAX_BYTES.trace,
): Promise<GzippedArtifact | null> {
  const events = (trace as { traceEvents?: unknown } | null)?.traceEvents;
  if (!Array.isArray(events)) return null;
  return boundedGzip(tracePieces(events), events.length + 1, maxBytes, (truncated, written) => {
    const metadata = {
      perfwatchTruncated: truncated,
      perfwatchEvents: Math.max(0, written - 1),
      events: events.length,
    };
    return `],"metadata":${JSON.stringify(metadata)}}\n`;
  });
}

/** The trace's text in pieces, each event stringified only when the gzip asks for it. */
function* tracePieces(events: readonly unknown[]): Generator<string> {
  yield '{"traceEvents":[\n';
  for (let index = 0; index < events.length; index++)
    yield `${index === 0 ? '' : ','}${JSON.stringify(events[index])}\n`;
}

/** Both artifacts of one Lighthouse run; a capture that fails leaves that kind out, never the run. */
export async function captureRunArtifacts(
  lhr: { audits?: Record<string, { details?: unknown } | undefined> },
  trace: unknown,
): Promise<RunArtifacts> {
  const [requests, traced] = await Promise.all([
    captureRequests(lhr, ARTIFACT_MAX_BYTES.requests, lcpImageUrl(trace)).catch(() => null),
    captureTrace(trace).catch(() => null),
  ]);
  return { ...(requests ? { requests } : {}), ...(traced ? { trace: traced } : {}) };
}
