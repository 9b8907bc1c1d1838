import { z } from 'zod';

/**
 * The URL of the LCP element's image, read from the run's trace: Lighthouse 13's result names
 * the LCP element (a node) but not its request. Chrome (checked on Chromium 14x) emits, on the
 * page's main frame, `largestContentfulPaint::Candidate` (args.data: nodeId, candidateIndex,
 * type 'image' | 'text') each time the largest element changes, and beside it a
 * `LargestImagePaint::Candidate` (args.data: DOMNodeId, candidateIndex, imageUrl) for the largest
 * image — which is not the LCP when text is larger, so the two are matched by node and frame.
 */

const lcpCandidateSchema = z.object({
  name: z.literal('largestContentfulPaint::Candidate'),
  ts: z.number(),
  args: z.object({
    frame: z.string().optional(),
    data: z.object({
      nodeId: z.number(),
      candidateIndex: z.number().optional(),
      type: z.string().optional(),
      isOutermostMainFrame: z.boolean().optional(),
      isMainFrame: z.boolean().optional(),
    }),
  }),
});

const imageCandidateSchema = z.object({
  name: z.literal('LargestImagePaint::Candidate'),
  ts: z.number(),
  args: z.object({
    frame: z.string().optional(),
    data: z.object({
      DOMNodeId: z.number(),
      candidateIndex: z.number().optional(),
      imageUrl: z.string().min(1),
    }),
  }),
});

type LcpCandidate = z.infer<typeof lcpCandidateSchema>;
type ImageCandidate = z.infer<typeof imageCandidateSchema>;

const inMainFrame = (data: LcpCandidate['args']['data']) => (data.isOutermostMainFrame ?? data.isMainFrame) === true;

/** The LCP image's URL, or null: a text LCP, no LCP in the trace, or a trace that is not one. */
export function lcpImageUrl(trace: unknown): string | null {
  const events = (trace as { traceEvents?: unknown } | null)?.traceEvents;
  if (!Array.isArray(events)) return null;
  let lcp: LcpCandidate | null = null;
  const images: ImageCandidate[] = [];
  for (const event of events as unknown[]) {
    const name = (event as { name?: unknown } | null)?.name;
    if (name === 'largestContentfulPaint::Candidate') {
      const parsed = lcpCandidateSchema.safeParse(event);
      // The last candidate is the LCP (Chrome stops reporting at the first input).
      if (parsed.success && inMainFrame(parsed.data.args.data) && (!lcp || parsed.data.ts >= lcp.ts)) lcp = parsed.data;
    } else if (name === 'LargestImagePaint::Candidate') {
      const parsed = imageCandidateSchema.safeParse(event);
      if (parsed.success) images.push(parsed.data);
    }
  }
  if (!lcp || (lcp.args.data.type !== undefined && lcp.args.data.type !== 'image')) return null;
  const { frame } = lcp.args;
  const { nodeId, candidateIndex } = lcp.args.data;
  const same = images.filter((image) => image.args.data.DOMNodeId === nodeId && image.args.frame === frame);
  const match = same.find((image) => image.args.data.candidateIndex === candidateIndex) ?? same.at(-1);
  return match?.args.data.imageUrl ?? null;
}
