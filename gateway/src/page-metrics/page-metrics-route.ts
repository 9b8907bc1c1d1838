import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ApiError } from '@perfwatch/common';
import { readLatestPageKpis, type PageKpiStore } from './latest-page-kpis.ts';
import { pageMetricsText } from './page-exposition.ts';

/** What the gateway's settings say of page metrics (PAGE_METRICS_TOKEN, PAGE_METRICS_MAX_PROJECTS). */
export interface PageMetricsSettings {
  /** The scrapers' bearer token; only its hash is kept. */
  token: string;
  maxProjects: number;
}

export interface PageMetricsOptions extends PageMetricsSettings {
  store: PageKpiStore;
  /** An answer is served again for this long: Prometheus servers in HA pairs and fast intervals cost one read. */
  cacheMs?: number;
  /** The reads of one answer stop after this long; what was not read counts as left out. */
  readMs?: number;
  now?: () => number;
}

/** Below Prometheus's default scrape timeout (10 s), so a slow database gives a partial answer, not a failed scrape. */
const READ_MS = 8_000;
const CACHE_MS = 15_000;

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/** Whether a request's Authorization header carries the token whose hash is `expected`, compared in constant time. */
function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  const given = /^Bearer (.+)$/i.exec(header ?? '')?.[1];
  // Both sides are hashes of the same length, so neither the length nor the content leaks through timing.
  return given !== undefined && timingSafeEqual(sha256(given), expected);
}

/**
 * `GET /metrics/pages`: page KPIs of every organisation's projects for the operator's
 * Prometheus, behind a bearer token. One read at a time: scrapes arriving during a read share it.
 */
export function pageMetricsRoute(options: PageMetricsOptions): RequestHandler {
  const { store, maxProjects, cacheMs = CACHE_MS, readMs = READ_MS, now = Date.now } = options;
  const expected = sha256(options.token);
  let cached: { at: number; answer: Promise<{ contentType: string; text: string }> } | undefined;
  const answer = () => {
    if (cached && now() - cached.at < cacheMs) return cached.answer;
    const at = now();
    const read = readLatestPageKpis(store, { maxProjects, deadline: at + readMs }).then(pageMetricsText);
    cached = { at, answer: read };
    // A failed read is not kept: the next scrape tries again.
    read.catch(() => {
      if (cached?.answer === read) cached = undefined;
    });
    return read;
  };
  return (req, res, next) => {
    if (!bearerMatches(req.get('authorization'), expected)) {
      next(
        new ApiError('UNAUTHORIZED', 'page metrics need the PAGE_METRICS_TOKEN as a bearer token', [], {
          headers: { 'WWW-Authenticate': 'Bearer realm="perfwatch page metrics"' },
        }),
      );
      return;
    }
    answer().then(({ contentType, text }) => res.type(contentType).send(text), next);
  };
}

/** The page-metrics options of the HTTP app from the gateway's settings; none when they are off. */
export function pageMetricsOptionsOf(settings: {
  PAGE_METRICS: 'on' | 'off';
  PAGE_METRICS_TOKEN?: string | undefined;
  PAGE_METRICS_MAX_PROJECTS: number;
}): { pageMetrics?: PageMetricsSettings } {
  if (settings.PAGE_METRICS === 'off') return {};
  if (settings.PAGE_METRICS_TOKEN === undefined)
    throw new Error('PAGE_METRICS=on needs PAGE_METRICS_TOKEN: the page metrics name every project URL');
  return { pageMetrics: { token: settings.PAGE_METRICS_TOKEN, maxProjects: settings.PAGE_METRICS_MAX_PROJECTS } };
}
