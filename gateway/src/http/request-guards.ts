import type { NextFunction, Request, Response } from 'express';
import { ipKeyGenerator, MemoryStore, rateLimit, type Options, type RateLimitInfo } from 'express-rate-limit';
import { ApiError } from '@perfwatch/common';

/** 406 when the caller's Accept header rules JSON out: every answer of the API is JSON. */
export function acceptsJson(req: Request, _res: Response, next: NextFunction): void {
  if (req.get('accept') && !req.accepts('application/json')) {
    throw new ApiError('NOT_ACCEPTABLE', 'This API answers in JSON only.', [
      `header Accept: ${req.get('accept')} excludes application/json`,
    ]);
  }
  next();
}

/** 415 for a POST, PUT or PATCH whose body is not JSON. A POST without a body is read as `{}`. */
export function jsonBodyOnly(req: Request, _res: Response, next: NextFunction): void {
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (
    (req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH') &&
    hasBody &&
    !req.is(['application/json', 'application/*+json'])
  ) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The body must be JSON.', [
      `header Content-Type: ${req.get('content-type') ?? '(none)'}; send application/json`,
    ]);
  }
  next();
}

/**
 * A per-user limit of requests per minute, whichever of the user's tokens they come with,
 * counted in this gateway's memory (with N replicas behind a load balancer a user gets up to N
 * times the limit; a shared store is a drop-in for express-rate-limit when that matters: what
 * must hold across replicas, sync updates in flight and runs queued, is counted in the
 * database). Over the limit: 429 with Retry-After.
 */
export function perUserLimit(perMinute: number, what: string) {
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req) => req.caller!.orgId,
    validate: { keyGeneratorIpFallback: false },
    handler: (req, _res, next) => {
      const reset =
        (req as Request & { rateLimit?: RateLimitInfo }).rateLimit?.resetTime?.getTime() ?? Date.now() + 60_000;
      const retryAfter = String(Math.max(1, Math.ceil((reset - Date.now()) / 1000)));
      next(
        new ApiError(
          'TOO_MANY_REQUESTS',
          `Too many ${what}. Try again in ${retryAfter} s.`,
          [`limit: ${perMinute} ${what} per minute per user`],
          { headers: { 'Retry-After': retryAfter } },
        ),
      );
    },
  });
}

/**
 * Failed authentications per client address and minute: past `perMinute`, the address gets 429
 * for the rest of the window, whatever token it sends, so guessing tokens is slow. Only
 * failures count (a busy client with a good token is never limited by this); they are counted
 * in express-rate-limit's store, after the failure, which its middleware cannot do (it counts
 * every request up front). The address is the socket's, or the proxy's X-Forwarded-For with
 * TRUST_PROXY set; IPv6 addresses count per /56, as the library advises.
 */
export function failedAuthGuard(perMinute: number) {
  const counts = new MemoryStore();
  counts.init({ windowMs: 60_000 } as Options);
  const keyOf = (req: Request) => ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
  return {
    async check(req: Request, _res: Response, next: NextFunction): Promise<void> {
      const seen = await counts.get(keyOf(req));
      if (seen && seen.totalHits >= perMinute) {
        const retryAfter = String(
          Math.max(1, Math.ceil(((seen.resetTime?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000)),
        );
        throw new ApiError(
          'TOO_MANY_REQUESTS',
          `Too many failed authentications from this address. Try again in ${retryAfter} s.`,
          [`limit: ${perMinute} failed authentications per minute per client address`],
          { headers: { 'Retry-After': retryAfter } },
        );
      }
      next();
    },
    async failed(req: Request): Promise<void> {
      await counts.increment(keyOf(req));
    },
  };
}
