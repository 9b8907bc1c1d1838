/**
 * The API's date forms. Responses carry `yyyy-MM-dd'T'HH:mm:ss` in UTC with no zone suffix;
 * requests may add milliseconds or a trailing `Z` (DESIGN.md, "Dates").
 */

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z?$/;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Formats an instant as the API's UTC date-time, truncated to the second. */
export function formatApiDateTime(date: Date): string {
  return date.toISOString().slice(0, 19);
}

/** Truncates an instant to the whole second, the precision of snapshot dates. */
export function truncateToSecond(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

/**
 * Parses a request date-time. Returns null for anything malformed or impossible
 * (2026-02-30T00:00:00 is rejected, not rolled over into March).
 */
export function parseApiDateTime(text: string): Date | null {
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  const roundTrips =
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute &&
    date.getUTCSeconds() === second;
  return roundTrips ? date : null;
}

/** Parses a request date (`yyyy-MM-dd`) as UTC midnight; null when malformed or impossible. */
export function parseApiDate(text: string): Date | null {
  const m = DATE_ONLY.exec(text);
  if (!m) return null;
  return parseApiDateTime(`${text}T00:00:00`);
}
