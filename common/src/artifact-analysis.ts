import { z } from 'zod';

/**
 * What perfwatch reads out of a run's heavy evidence: the lines of the requests artifact (the
 * agent writes them, the gateway reads them back with this same schema), the cost of each third
 * party, and what changed between two snapshots' requests (docs/artifacts.md).
 */

/** A URL longer than this (data: URIs Lighthouse did not elide, tracking beacons) is cut. */
const MAX_URL_CHARS = 2048;
const MAX_TEXT_CHARS = 200;

const text = (max: number) =>
  z
    .string()
    .transform((value) => (value.length > max ? `${value.slice(0, max)}…` : value))
    .optional()
    .catch(undefined);
const number = z.number().finite().optional().catch(undefined);
const flag = z.boolean().optional().catch(undefined);

/**
 * One line of the requests artifact: the fields of Lighthouse's `network-requests` items a
 * waterfall needs. Every field is optional and a wrong one is dropped, never the line.
 */
export const artifactRequestLineSchema = z.object({
  url: text(MAX_URL_CHARS),
  protocol: text(MAX_TEXT_CHARS),
  rendererStartTime: number,
  networkRequestTime: number,
  networkEndTime: number,
  transferSize: number,
  resourceSize: number,
  statusCode: number,
  mimeType: text(MAX_TEXT_CHARS),
  resourceType: text(MAX_TEXT_CHARS),
  priority: text(MAX_TEXT_CHARS),
  entity: text(MAX_TEXT_CHARS),
  isLinkPreload: flag,
  experimentalFromMainFrame: flag,
  /** Added with issue 35: the request of the LCP element's resource (an image); absent for a text LCP. */
  lcp: flag,
});

/** The requests artifact's last line: how many requests the run made and how many lines were written. */
export const artifactRequestsEndSchema = z.object({
  end: z.literal(true),
  requests: z.number().int().nonnegative(),
  written: z.number().int().nonnegative(),
  truncated: z.boolean(),
});

const thirdPartyCostSchema = z.object({
  /** Bytes over the network of the entity's requests. */
  transferSize: z.number().nonnegative(),
  /** Main-thread time attributed to the entity's scripts, ms. */
  mainThreadTime: z.number().nonnegative(),
  /** Σ max(0, duration − 50 ms) of the long tasks attributed to the entity's URLs, ms. */
  blockingTime: z.number().nonnegative(),
  requests: z.number().int().nonnegative(),
});
export type ThirdPartyCost = z.infer<typeof thirdPartyCostSchema>;

export const thirdPartySummarySchema = thirdPartyCostSchema.extend({
  /** Lighthouse's entity name (third-party-web), or the host for an unrecognised origin. */
  entity: z.string(),
  firstParty: z.boolean(),
});
export type ThirdPartySummary = z.infer<typeof thirdPartySummarySchema>;

const requestSideSchema = z.object({ transferSize: z.number(), duration: z.number() });

/** One request in a comparison: `from` only when removed, `to` only when added, both when grown. */
const requestChangeSchema = z.object({
  url: z.string(),
  entity: z.string().optional(),
  resourceType: z.string().optional(),
  from: requestSideSchema.optional(),
  to: requestSideSchema.optional(),
});
export type RequestChange = z.infer<typeof requestChangeSchema>;

const requestsDiffSchema = z.object({
  added: z.array(requestChangeSchema),
  removed: z.array(requestChangeSchema),
  grown: z.array(requestChangeSchema),
});
export type RequestsDiff = z.infer<typeof requestsDiffSchema>;

/** A third party whose cost changed: null on the side where it made no request. */
export const thirdPartyChangeSchema = z.object({
  entity: z.string(),
  from: thirdPartyCostSchema.nullable(),
  to: thirdPartyCostSchema.nullable(),
});
export type ThirdPartyChange = z.infer<typeof thirdPartyChangeSchema>;

/** The requests part of a compared cell: compared, or why not (a side without its requests artifact). */
export const requestsComparisonSchema = z.discriminatedUnion('state', [
  requestsDiffSchema.extend({
    state: z.literal('compared'),
    /** A side's artifact was cut (the agent's bound, or the read's): requests past the cut look added or removed. */
    truncated: z.literal(true).optional(),
  }),
  z.object({ state: z.literal('unavailable'), reason: z.string() }),
]);
export type RequestsComparison = z.infer<typeof requestsComparisonSchema>;
