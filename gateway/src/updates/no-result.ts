import type { Device, Location } from '@perfwatch/common';
import { RUN_FAILURES, type RunFailureCode } from '../dispatch/run-failures.ts';

/**
 * Why an update produced nothing: no agent serves any of its locations, every run timed out
 * (no reply from an agent in time, or the page not done within the run timeout), every run
 * failed otherwise (the page did not load, Lighthouse failed), or the project's credentials
 * cannot be read here. http-errors.ts says what each is to a caller.
 */
export type NoResultKind = 'NO_AGENT' | 'TIMED_OUT' | 'FAILED' | 'CREDENTIALS_UNREADABLE' | 'CREDENTIALS_NOT_TRUSTED';

/** An update that produced nothing; `repeats` when trying it again would fail the same way. */
export class NoResultError extends Error {
  readonly kind: NoResultKind;
  readonly reasons: readonly string[];
  readonly repeats: boolean;
  constructor(kind: NoResultKind, message: string, reasons: readonly string[], repeats: boolean) {
    super(message);
    this.name = 'NoResultError';
    this.kind = kind;
    this.reasons = reasons;
    this.repeats = repeats;
  }
}

/** What an update whose every run failed is refused with, by how they failed. */
export function noResultError(
  failures: ReadonlyArray<{ device: Device; location: Location; code: RunFailureCode; message: string }>,
): NoResultError {
  const reasons = [...new Set(failures.map((f) => `${f.device}/${f.location}: ${f.message}`))];
  if (failures.every((f) => f.code === 'NO_RESPONDERS')) {
    return new NoResultError(
      'NO_AGENT',
      "No agent serves any of the project's locations. Try again later.",
      reasons,
      false,
    );
  }
  if (failures.every((f) => f.code === 'TIMEOUT' || f.code === 'RUN_TIMEOUT')) {
    return new NoResultError('TIMED_OUT', 'Every run of the update timed out.', reasons, false);
  }
  return new NoResultError(
    'FAILED',
    'Every run of the update failed.',
    reasons,
    failures.every((f) => RUN_FAILURES[f.code].repeats),
  );
}
