/**
 * A project has at most one snapshot per second (the API addresses a snapshot by its project
 * and its date to the second): one taken in a second already used moves a second later, at
 * most this many times.
 */
export const MAX_DATE_SHIFT_SECONDS = 60;

/** The dates a snapshot taken at `date` may be stored at, in the order to try them. */
export function* snapshotDates(date: Date): Generator<Date> {
  for (let shift = 0; shift <= MAX_DATE_SHIFT_SECONDS; shift++) yield new Date(date.getTime() + shift * 1000);
}

/** Every date a snapshot may move to is taken. */
export class NoFreeSnapshotDate extends Error {
  constructor(url: string, date: Date) {
    super(`project ${url} has a snapshot in each of the ${MAX_DATE_SHIFT_SECONDS} seconds after ${date.toISOString()}`);
    this.name = 'NoFreeSnapshotDate';
  }
}
