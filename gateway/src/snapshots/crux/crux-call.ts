import pRetry, { AbortError } from 'p-retry';
import type { z } from 'zod';

/** Where and how a CrUX API is called. */
export interface CruxCallOptions {
  endpoint: string;
  /** Only ever in the request's URL: never in an error or a log line. */
  apiKey: string;
  retries: number;
  minRetryMs: number;
  timeoutMs: number;
}

class RetryableCruxError extends Error {}

/**
 * One POST to a CrUX API method (`records:queryRecord`, `records:queryHistoryRecord`), read
 * against `schema`: null on 404 (CrUX has no data); 429, 5xx and timeouts tried again with
 * backoff; any other status an error naming the API (`api`) and the status.
 */
export function callCrux<S extends z.ZodType>(
  { endpoint, apiKey, retries, minRetryMs, timeoutMs }: CruxCallOptions,
  { api, method, body, schema }: { api: string; method: string; body: object; schema: S },
): Promise<z.output<S> | null> {
  return pRetry(
    async () => {
      const res = await fetch(`${endpoint.replace(/\/$/, '')}/v1/${method}?key=${encodeURIComponent(apiKey)}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (res.status === 404) return null;
      if (res.status === 429 || res.status >= 500) throw new RetryableCruxError(`${api} answered ${res.status}`);
      if (!res.ok) throw new AbortError(`${api} answered ${res.status}`);
      return schema.parse(await res.json()) as z.output<S>;
    },
    {
      retries,
      minTimeout: minRetryMs,
      factor: 2,
      shouldRetry: ({ error }) => error instanceof RetryableCruxError || error.name === 'TimeoutError',
    },
  );
}
