import type { z } from 'zod';

/** A response's description; `retryAfter`: it comes with a Retry-After header. */
export type ResponseDoc = string | { description: string; retryAfter: true };

/** What the OpenAPI document says of an endpoint besides its schemas (openapi.ts). */
export interface EndpointDoc {
  summary: string;
  /** What the 200 answer is. */
  answer: string;
  /** The statuses this endpoint has besides every endpoint's, by every method or by POST (PUT) alone. */
  responses?: Record<string, ResponseDoc>;
  postResponses?: Record<string, ResponseDoc>;
  /** The statuses PATCH and DELETE add, when they differ from the others' (/v1/projects). */
  patchResponses?: Record<string, ResponseDoc>;
  deleteResponses?: Record<string, ResponseDoc>;
  /** false: it names no project, so cannot answer 404 for one. */
  project?: false;
  /** false: POST may come without a body. */
  bodyRequired?: false;
  /** The 200 answer's media types besides JSON, each with its schema (/v1/artifacts' NDJSON). */
  answerTypes?: Record<string, z.ZodType>;
  /** Headers the 200 answer may carry, each with its description. */
  answerHeaders?: Record<string, string>;
}
