import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, DEVICES, LOCATIONS, parseApiDateTime, UPDATE_MODES } from '@perfwatch/common';

/**
 * The parameters of a request, whatever its method: GET's query string or POST's JSON body.
 * Both become one plain object that one zod schema per endpoint turns into a typed request.
 */
export function rawParams(req: Request): Record<string, unknown> {
  if (req.method === 'POST') {
    const body: unknown = req.body;
    if (body === undefined || body === null) return {};
    if (typeof body !== 'object' || Array.isArray(body)) throw new ApiError('BAD_REQUEST', 'The JSON body must be an object.', ['body: expected a JSON object']);
    return body as Record<string, unknown>;
  }
  return req.query as Record<string, unknown>;
}

export function parseParams<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'request'}: ${issue.message}`);
  throw new ApiError('BAD_REQUEST', 'The request has invalid parameters.', errors);
}

/** A project URL as stored and matched: absolute http(s), normalised by the WHATWG URL parser. */
export function normalizeProjectUrl(text: string): string | null {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

const projectUrl = z
  .string({ error: 'url is required and must be a string' })
  .min(1, 'url is required')
  .max(2048, 'url is longer than 2048 characters')
  .transform((text, ctx) => {
    const normalized = normalizeProjectUrl(text);
    if (normalized === null) {
      ctx.addIssue({ code: 'custom', message: 'url must be an absolute http(s) URL' });
      return z.NEVER;
    }
    return normalized;
  });

/** One value or the same parameter repeated (GET), or a JSON array (POST). */
function oneOrMany<T extends z.ZodType>(item: T) {
  return z.union([item.transform((v) => [v]), z.array(item).min(1)]);
}

export const updateParamsSchema = z.object({
  url: projectUrl,
  device: z.enum(DEVICES).optional(),
  mode: z.enum(UPDATE_MODES).default('sync'),
  updateType: z.enum(['manual', 'ci']).default('manual'),
});

export const auditParamsSchema = z.object({
  url: projectUrl,
  date: z.string({ error: 'date is required and must be a string' }).transform((text, ctx) => {
    const date = parseApiDateTime(text);
    if (date === null) {
      ctx.addIssue({ code: 'custom', message: "date must be a UTC date-time, yyyy-MM-dd'T'HH:mm:ss" });
      return z.NEVER;
    }
    return date;
  }),
  device: z.enum(DEVICES).optional(),
  location: oneOrMany(z.enum(LOCATIONS)).optional(),
});
