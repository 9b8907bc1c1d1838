import type { z } from 'zod';
import { errorEnvelopeSchema } from '@perfwatch/common';
import { ApiClientError } from './api-client-error.ts';

/** Where the client's requests go, and as whom. */
export interface Connection {
  base: string;
  token: string;
  fetchImpl: typeof fetch;
}

/**
 * POSTs `body` as JSON (or PUTs or PATCHes it; GET and DELETE send none) and reads the answer against
 * `schema`; an error envelope becomes ApiClientError.
 */
export async function postJson<S extends z.ZodType>(
  { base, token, fetchImpl }: Connection,
  path: string,
  body: unknown,
  schema: S,
  timeoutMs: number,
  method: 'POST' | 'PUT' | 'PATCH' | 'GET' | 'DELETE' = 'POST',
): Promise<z.output<S>> {
  let response: Response;
  const withBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
  try {
    response = await fetchImpl(`${base}${path}`, {
      method,
      headers: {
        authorization: token,
        accept: 'application/json',
        ...(withBody ? { 'content-type': 'application/json' } : {}),
      },
      ...(withBody ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause;
    throw new Error(`cannot reach ${base}: ${cause?.message ?? (error as Error).message}`, { cause: error });
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ApiClientError(response.status, null, `not JSON from ${base}${path}: ${text.slice(0, 200)}`);
  }
  if (!response.ok) {
    const envelope = errorEnvelopeSchema.safeParse(json);
    throw new ApiClientError(response.status, envelope.success ? envelope.data : null, text.slice(0, 200));
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new ApiClientError(
      response.status,
      null,
      `unexpected answer from ${path}: ${parsed.error.issues
        .map((i) => `${i.path.join('.')}: ${i.message}`)
        .slice(0, 3)
        .join('; ')}`,
    );
  return parsed.data;
}
