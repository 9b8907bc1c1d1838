import { callCrux } from './crux-call.ts';
import type { Logger } from 'pino';
import { z } from 'zod';
import { cruxFormFactor, cruxRecordSchema, type CruxRecord, type Device } from '@perfwatch/common';

export interface CruxClientOptions {
  /** Base URL of the CrUX API, e.g. https://chromeuxreport.googleapis.com */
  endpoint: string;
  apiKey: string;
  logger: Logger;
  /** Attempts after the first on 429 and 5xx, with exponential backoff. */
  retries?: number;
  minRetryMs?: number;
  timeoutMs?: number;
  now?: () => Date;
}

export interface FieldData {
  url: CruxRecord | null;
  origin: CruxRecord | null;
}

export interface CruxClient {
  /** Field data for a page and its origin; null when CrUX could not be asked (then nothing is claimed). */
  fieldData(url: string, device: Device): Promise<FieldData | null>;
}

const responseSchema = z.looseObject({ record: cruxRecordSchema });

/**
 * A client of the CrUX API's `records:queryRecord`. 404 means CrUX has no data (null); 429 and
 * 5xx are retried with backoff; answers are cached per UTC day, since CrUX updates daily.
 */
export function createCruxClient({
  endpoint,
  apiKey,
  logger,
  retries = 3,
  minRetryMs = 500,
  timeoutMs = 10_000,
  now = () => new Date(),
}: CruxClientOptions): CruxClient {
  const cache = new Map<string, Promise<CruxRecord | null>>();
  let cacheDay = '';

  function cached(kind: 'url' | 'origin', value: string, device: Device): Promise<CruxRecord | null> {
    const day = now().toISOString().slice(0, 10);
    if (day !== cacheDay) {
      cache.clear();
      cacheDay = day;
    }
    const formFactor = cruxFormFactor(device);
    const key = `${kind} ${formFactor} ${value}`;
    let pending = cache.get(key);
    if (!pending) {
      pending = callCrux(
        { endpoint, apiKey, retries, minRetryMs, timeoutMs },
        { api: 'CrUX API', method: 'records:queryRecord', body: { [kind]: value, formFactor }, schema: responseSchema },
      ).then((answer) => answer?.record ?? null);
      // A failure is not cached: the next update asks again.
      pending.catch(() => cache.delete(key));
      cache.set(key, pending);
    }
    return pending;
  }

  return {
    async fieldData(url, device) {
      // Both answers are awaited, failed or not, so no request outlives the call.
      const [page, origin] = await Promise.allSettled([
        cached('url', url, device),
        cached('origin', new URL(url).origin, device),
      ]);
      if (page.status === 'fulfilled' && origin.status === 'fulfilled')
        return { url: page.value, origin: origin.value };
      const error = (page.status === 'rejected' ? page.reason : (origin as PromiseRejectedResult).reason) as Error;
      // The API key never reaches the log: it is only in the request URL, never in the error.
      logger.warn({ err: { message: error.message }, device }, 'CrUX field data unavailable');
      return null;
    },
  };
}
