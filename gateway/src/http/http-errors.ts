import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { ApiError, type ErrorStatus } from '@perfwatch/common';
import { NoResultError, type NoResultKind } from '../updates/no-result.ts';
import { UpdateRefused, type RefusalKind } from '../updates/update-refused.ts';
import { StoreFull } from '../store/store.ts';

/**
 * 405 for any method but an endpoint's own (API_ENDPOINTS' `methods`), HEAD and OPTIONS included:
 * an update must never run on a HEAD.
 */
export function onlyMethods(methods: readonly string[]): RequestHandler {
  const allow = methods.join(', ');
  return (req, _res, next) => {
    if (methods.includes(req.method)) return next();
    throw new ApiError('METHOD_NOT_ALLOWED', `Method ${req.method} is not allowed.`, [`supported methods: ${allow}`], {
      headers: { Allow: allow },
    });
  };
}

export function notFoundRoute(req: Request): never {
  throw new ApiError('NOT_FOUND', 'No such endpoint.', [`${req.method} ${req.path} is not part of the API`]);
}

/**
 * The one place where errors become HTTP responses. An ApiError is reported as it says;
 * body-parser's errors keep their status; anything else is a 500 whose cause stays in the log.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const apiError = toApiError(error);
    // A full store is the operator's to fix: logged as loudly as a failure of ours.
    if (apiError.status === 'INTERNAL_SERVER_ERROR' || error instanceof StoreFull) {
      logger.error({ err: error, requestId: req.requestId, route: req.path }, 'request failed');
    }
    res.status(apiError.httpStatus).set(apiError.headers).json(apiError.toEnvelope());
  };
}

/** What a caller is told of an update that produced nothing. */
const NO_RESULT_STATUS = {
  NO_AGENT: 'SERVICE_UNAVAILABLE',
  CREDENTIALS_UNREADABLE: 'SERVICE_UNAVAILABLE',
  CREDENTIALS_NOT_TRUSTED: 'BAD_REQUEST',
  TIMED_OUT: 'GATEWAY_TIMEOUT',
  FAILED: 'BAD_GATEWAY',
} as const satisfies Record<NoResultKind, ErrorStatus>;

/** What a caller is told of an update that was not taken, and when to come back. */
const REFUSAL_STATUS = {
  BACKLOG_FULL: { status: 'TOO_MANY_REQUESTS', retryAfterS: 60 },
  LOCATION_FULL: { status: 'TOO_MANY_REQUESTS', retryAfterS: 60 },
  NOT_QUEUED: { status: 'SERVICE_UNAVAILABLE', retryAfterS: null },
} as const satisfies Record<RefusalKind, { status: ErrorStatus; retryAfterS: number | null }>;

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof NoResultError) return new ApiError(NO_RESULT_STATUS[error.kind], error.message, error.reasons);
  if (error instanceof UpdateRefused) {
    const { status, retryAfterS } = REFUSAL_STATUS[error.kind];
    return new ApiError(
      status,
      error.message,
      error.reasons,
      retryAfterS === null ? {} : { headers: { 'Retry-After': String(retryAfterS) } },
    );
  }
  if (error instanceof StoreFull)
    return new ApiError('SERVICE_UNAVAILABLE', 'The service has no room left to store this: nothing was saved.', [
      'store: full (the disk holding its data has no space left); try again once its operator has made room',
    ]);
  const status = (error as { status?: unknown; type?: unknown } | null)?.status;
  const type = (error as { type?: unknown } | null)?.type;
  if (status === 400 && type === 'entity.parse.failed')
    return new ApiError('BAD_REQUEST', 'The body is not valid JSON.', ['body: malformed JSON']);
  if (status === 413)
    return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is too large.', ['body: larger than the limit']);
  if (status === 415)
    return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The body encoding is not supported.', [
      'body: unsupported encoding',
    ]);
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new ApiError('BAD_REQUEST', 'The request could not be read.', [String((error as Error).message)]);
  return new ApiError('INTERNAL_SERVER_ERROR', 'Something went wrong on our side. Please try again.', [], {
    cause: error,
  });
}
