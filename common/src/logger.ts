import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * Paths that may carry a secret. Fixed in code, never configurable, so no setting can
 * turn redaction off.
 */
const REDACT_PATHS = [
  'authorization',
  'token',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.authorization',
  '*.token',
  // A page's login (page-auth.ts) and webhook secrets, wherever a job or record is logged whole.
  'auth',
  '*.auth',
  'secret',
  '*.secret',
];

export interface LoggerOptions {
  name: string;
  level?: string;
  destination?: DestinationStream;
}

export function createLogger({ name, level = 'info', destination }: LoggerOptions): Logger {
  const options = { name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { name } };
  return destination ? pino(options, destination) : pino(options);
}
