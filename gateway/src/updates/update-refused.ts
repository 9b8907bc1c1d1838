/**
 * Why an update was not taken: its user's backlog is full, a location has as many updates
 * waiting as the service takes, or the queue could not take it. http-errors.ts says what each
 * is to a caller (429 with a time to come back, or 503).
 */
export type RefusalKind = 'BACKLOG_FULL' | 'LOCATION_FULL' | 'NOT_QUEUED';

export class UpdateRefused extends Error {
  readonly kind: RefusalKind;
  readonly reasons: readonly string[];
  constructor(kind: RefusalKind, message: string, reasons: readonly string[] = []) {
    super(message);
    this.name = 'UpdateRefused';
    this.kind = kind;
    this.reasons = reasons;
  }
}
