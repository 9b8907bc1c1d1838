import type { z } from 'zod';
import { readUpTo } from './bounded-body.ts';
import { ForgeError, forgeErrorOf } from './forge-errors.ts';

/** A forge that does not answer within this long is reported unavailable, not waited for. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Bytes of a successful answer read: a page of 100 comments of GitHub's maximum size is 6.5 MB. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

export type Fetch = typeof fetch;

/** An answer's body as text; null past `maxBytes` (declared so, or streamed so), never read further. */
export async function boundedText(response: Response, maxBytes: number): Promise<string | null> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    return null;
  }
  const { text, more } = await readUpTo(response, maxBytes);
  return more ? null : text;
}

export interface ForgeRequest<T> {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  /** What the request does, for messages: "status perfwatch/mobile/london on abc1234". */
  what: string;
  /** The answer's shape (only the fields read); none: the answer is not read. */
  answer?: z.ZodType<T>;
}

/**
 * One request to a forge: a JSON body out, the answer checked against the fields read. Every
 * forge answer is untrusted input: bounded in time and bytes, and parsed with zod.
 */
export async function forgeRequest<T>(
  fetchFn: Fetch,
  request: ForgeRequest<T>,
): Promise<{ value: T; headers: Headers }> {
  let response: Response;
  try {
    response = await fetchFn(request.url, {
      method: request.method,
      headers: {
        ...request.headers,
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      redirect: 'error',
    });
  } catch (error) {
    throw new ForgeError('unavailable', `${request.what}: no answer (${(error as Error).message})`);
  }
  if (!response.ok) throw await forgeErrorOf(response, request.what);
  if (!request.answer) {
    await response.body?.cancel();
    return { value: undefined as T, headers: response.headers };
  }
  const text = await boundedText(response, MAX_ANSWER_BYTES);
  if (text === null)
    throw new ForgeError(
      'rejected',
      `${request.what}: an answer of more than ${MAX_ANSWER_BYTES} bytes, more than perfwatch reads`,
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ForgeError('rejected', `${request.what}: the answer is not JSON`, { status: response.status });
  }
  const parsed = request.answer.safeParse(json);
  if (!parsed.success)
    throw new ForgeError('rejected', `${request.what}: unexpected answer (${parsed.error.issues[0]?.message ?? ''})`, {
      status: response.status,
    });
  return { value: parsed.data, headers: response.headers };
}
