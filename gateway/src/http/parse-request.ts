import type { Request } from 'express';
import type { z } from 'zod';
import { ApiError } from '@perfwatch/common';

/**
 * How an endpoint's request is read: its query string by GET (and DELETE), its JSON body by POST (and PUT), each by
 * its own schema (common/src/api), both giving the same typed request. `writes` names the
 * parameters that change something, which a GET may not carry.
 */
export interface RequestSchemas<Q extends z.ZodType, B extends z.ZodType> {
  query: Q;
  body: B;
  /** PATCH's body and DELETE's query, when they are not POST's and GET's. */
  patchBody?: z.ZodType<z.output<B>>;
  deleteQuery?: z.ZodType<z.output<Q>>;
  writes?: readonly string[];
}

/** Parses a request with the schema of its method; every problem becomes one line of a 400. */
export function parseRequest<Q extends z.ZodType, B extends z.ZodType>(
  req: Request,
  schemas: RequestSchemas<Q, B>,
): z.output<Q> | z.output<B> {
  // PUT and PATCH carry their request as POST does, DELETE as GET does.
  const withBody = req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH';
  if (!withBody) refuseWritesByGet(req, schemas.writes ?? []);
  if (withBody) {
    // No body at all is an empty object (POST /v1/projects needs none); a JSON `null` is not.
    const body: unknown = req.body === undefined ? {} : req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new ApiError('BAD_REQUEST', 'The JSON body must be an object.', ['body: expected a JSON object']);
    return check(req.method === 'PATCH' ? (schemas.patchBody ?? schemas.body) : schemas.body, body);
  }
  return check(req.method === 'DELETE' ? (schemas.deleteQuery ?? schemas.query) : schemas.query, req.query);
}

/**
 * A GET reads. One that would change something (a budget, a webhook, an annotation,
 * credentials) is refused with 405 and `Allow: POST`, before anything is looked at: a link
 * followed by a crawler, a prefetching browser or a chat preview must never change state, and
 * a URL is what access logs and proxies keep.
 */
function refuseWritesByGet(req: Request, writes: readonly string[]): void {
  const query = req.query as Record<string, unknown>;
  const given = writes.filter((name) => Object.hasOwn(query, name));
  if (given.length === 0) return;
  throw new ApiError(
    'METHOD_NOT_ALLOWED',
    'This request changes something: send it as POST with a JSON body. GET only reads.',
    [`${given.join(', ')}: POST only`],
    { headers: { Allow: 'POST' } },
  );
}

/** Parses `raw` with `schema`; every problem becomes one line of a 400. */
function check<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return `unknown parameter(s): ${issue.keys.join(', ')}`;
    const path = issue.path.join('.');
    return path && !issue.message.startsWith(String(issue.path.at(-1))) ? `${path}: ${issue.message}` : issue.message;
  });
  throw new ApiError('BAD_REQUEST', 'The request has invalid parameters.', errors);
}
