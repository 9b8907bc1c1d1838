import type { ParseArgsOptionsConfig } from 'node:util';
import { UsageError, type CliIo, type Env } from '@perfwatch/common';
import type { ApiClient } from './api-client.ts';
import type { ProgressStream } from './update-progress.ts';

export interface ClientIo extends CliIo {
  out: ProgressStream;
  err: ProgressStream;
  fetch?: typeof fetch;
  /** Poll interval of a waited-for update. */
  pollMs?: number;
  /** Where `update --site … --pages -` reads its pages; absent: the process's standard input. */
  stdin?: AsyncIterable<string | Uint8Array>;
}

/** What a client command works with: the API, as the token given, and where to write. */
export interface ClientContext {
  client: ApiClient;
  io: ClientIo;
  /** The gateway's address, which links to its dashboard start from. */
  server: string;
  /** The environment the CLI runs in: a CI's own variables are read from it (`--report`). */
  env: Env;
}

/** The options every client command takes. */
export const COMMON_OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean', default: false },
} satisfies ParseArgsOptionsConfig;

/** A flag's value checked against the values it may take. */
export function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}
