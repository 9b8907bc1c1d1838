import { randomBytes } from 'node:crypto';
import type { PageRunner } from '@perfwatch/agent';
import { captureRequests, captureTrace, type RunArtifacts } from '../../agent/src/artifact-capture.ts';
import type { GzippedArtifact } from '../../agent/src/artifact-gzip.ts';

/**
 * A trace of about `gzipBytes` gzipped, made as the agent makes a run's trace (captureTrace):
 * events named with random bytes, so it compresses as badly as a real one's many URLs and ids
 * and crosses many chunks of the transfer.
 */
export async function bulkyTrace(gzipBytes: number): Promise<GzippedArtifact> {
  // One event is about 135 bytes once gzipped: 128 random bytes in base64, and its JSON around them.
  const events = Array.from({ length: Math.ceil(gzipBytes / 135) }, (_, ts) => ({
    ts,
    name: randomBytes(128).toString('base64'),
  }));
  const trace = await captureTrace({ traceEvents: events });
  if (!trace || trace.truncated) throw new Error(`a trace of ${gzipBytes} bytes is past the agent's bound`);
  return trace;
}

/**
 * `runner`'s runs, each keeping artifacts as a Lighthouse run does (the agent's job executor puts
 * them in its cache for the gateway to pull): the result's own requests, captured as the agent
 * captures them, and `trace`. Each run gets artifacts of its own: the cache drops what it sent.
 */
export function keepingArtifacts(runner: PageRunner, trace: GzippedArtifact): PageRunner {
  return {
    async run(request) {
      const output = await runner.run(request);
      const requests = await captureRequests(output.lhr);
      const artifacts: RunArtifacts = { ...(requests ? { requests } : {}), trace };
      return { ...output, artifacts };
    },
    close: () => runner.close(),
  };
}
