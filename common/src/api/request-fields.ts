import { z } from 'zod';
import { parseApiDate, parseApiDateTime } from '../dates.ts';
import { DEVICES, LOCATIONS } from '../ids.ts';
import { SECTIONS } from '../lighthouse-kpis.ts';

/**
 * The parameter schemas the API's endpoints are built from. Each endpoint has one schema for
 * its query string (GET) and one for its JSON body (POST), built from these same fields and
 * giving the same typed request, so GET and POST cannot drift apart. Unknown parameters are
 * refused: a misspelt `devices=mobile` silently running both devices would cost minutes.
 */

export function normalizeProjectUrl(text: string): string | null {
  const url = URL.parse(text);
  return url?.protocol === 'http:' || url?.protocol === 'https:' ? url.href : null;
}

/** A string parameter's message when it is absent, repeated, or not a string. */
export const once = (name: string) => ({
  error: (issue: { input: unknown }) =>
    Array.isArray(issue.input)
      ? `${name} is given more than once`
      : issue.input === undefined
        ? `${name} is required`
        : `${name} must be a string`,
});

/** A string parameter given once, turned into a value by `parse`; null from `parse` is `message`. */
export function parsedString<T>(base: z.ZodString, parse: (text: string) => T | null, message: string) {
  return base.transform((text, ctx) => {
    const value = parse(text);
    if (value === null) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return value;
  });
}

export const projectUrl = parsedString(
  z.string(once('url')).min(1, 'url is required').max(2048, 'url is longer than 2048 characters'),
  normalizeProjectUrl,
  'url must be an absolute http(s) URL',
).meta({ description: 'The project URL (URL-encoded in a query string).', example: 'https://shop.example/' });

/** One of `values`; anything else is refused by naming them. */
export const oneOf = <const V extends readonly [string, ...string[]]>(name: string, values: V) =>
  z.enum(values, { error: `${name} must be one of ${values.join(', ')}` });

export const device = oneOf('device', DEVICES).meta({ description: 'Device class; omitted: all.' });

/** One value, the parameter repeated (GET), or a JSON array (POST). */
function oneOrMany<T extends z.ZodType>(item: T, name: string) {
  return z.union(
    [
      item.transform((v) => [v] as Array<z.output<T>>),
      z.array(item).min(1, `${name} must not be empty`).max(20, `${name} has too many values`),
    ],
    {
      error: `${name} must be one or more of the allowed values`,
    },
  );
}

const location = oneOf('location', LOCATIONS);
export const locations = oneOrMany(location, 'location').meta({
  description: 'Location filter; repeat the parameter in GET, a JSON array in POST.',
});
const section = oneOf('section', SECTIONS);
export const sections = oneOrMany(section, 'sections').meta({
  description: 'Section filter; repeat `section` (or `sections`) in GET, a JSON array in POST.',
});

export const dateTime = (name: string) =>
  parsedString(
    z.string(once(name)),
    parseApiDateTime,
    `${name} must be a UTC date-time yyyy-MM-dd'T'HH:mm:ss (a trailing Z or milliseconds are accepted)`,
  ).meta({ example: '2026-11-22T11:18:40' });

export const dateOnly = (name: string) =>
  parsedString(z.string(once(name)), parseApiDate, `${name} must be a UTC date yyyy-MM-dd`).meta({
    example: '2026-11-01',
  });

/** A whole number from 1 to `max`, refused with one message naming the range. */
export function pageLimit(max: number) {
  const message = `limit must be a whole number from 1 to ${max}`;
  return z.coerce.number({ error: message }).int(message).min(1, message).max(max, message);
}
