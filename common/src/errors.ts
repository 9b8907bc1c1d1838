import { z } from 'zod';

/**
 * Error statuses of the HTTP interface: the spec's table plus DESIGN.md's additions.
 * One table, so the gateway maps an error to HTTP in exactly one place.
 */
const ERROR_STATUSES = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  /** Known, and not allowed this: a role or a token's scope below what the request needs (issue 33). */
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  NOT_ACCEPTABLE: 406,
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** What it would create exists already (a project at a URL the caller has). */
  CONFLICT: 409,
  /** Understood, and refused for what it names (a forge's preview URL the target guard refuses). */
  UNPROCESSABLE_CONTENT: 422,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_SERVER_ERROR: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const;
export type ErrorStatus = keyof typeof ERROR_STATUSES;

export const errorEnvelopeSchema = z
  .object({
    status: z.enum(Object.keys(ERROR_STATUSES) as [ErrorStatus, ...ErrorStatus[]]),
    message: z.string(),
    errors: z.array(z.string()),
  })
  .meta({ id: 'Error' });
export type ErrorEnvelope = z.infer<typeof errorEnvelopeSchema>;

/**
 * An error the API reports to its caller. Anything thrown that is not an ApiError is
 * an unexpected failure and becomes a 500 whose details stay in the log.
 */
export class ApiError extends Error {
  readonly status: ErrorStatus;
  readonly errors: readonly string[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: ErrorStatus,
    message: string,
    errors: readonly string[] = [],
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, { cause: options?.cause });
    this.name = 'ApiError';
    this.status = status;
    this.errors = errors;
    this.headers = options?.headers ?? {};
  }

  get httpStatus(): number {
    return ERROR_STATUSES[this.status];
  }

  toEnvelope(): ErrorEnvelope {
    return { status: this.status, message: this.message, errors: [...this.errors] };
  }
}

/** A configuration that cannot be used; lists every bad setting at once. */
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** A program cannot start for a reason the operator can fix (a server refused its credentials). */
export class StartupError extends Error {
  /** True when the same settings may work later (a server not up yet), false when they are wrong. */
  readonly retryable: boolean;

  constructor(message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, { cause: options?.cause });
    this.name = 'StartupError';
    this.retryable = options?.retryable ?? false;
  }
}
