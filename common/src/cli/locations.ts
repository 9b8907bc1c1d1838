import { LOCATIONS, type Location } from '../ids.ts';

/** A list of locations on a command line that names none, or one perfwatch does not know. */
export class LocationListError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LocationListError';
  }
}

/**
 * Parses a comma-separated list of locations (`tokyo, london`) as every command line takes one
 * (`--locations`, `--location`, `--default-location`): blanks around names ignored, every unknown
 * name reported at once, an empty list refused, duplicates kept for the caller to judge.
 */
export function parseLocationList(text: string): Location[] {
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (names.length === 0) throw new LocationListError(`no location given; known: ${LOCATIONS.join(', ')}`);
  const unknown = names.filter((name) => !(LOCATIONS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new LocationListError(`unknown location(s) ${unknown.join(', ')}; known: ${LOCATIONS.join(', ')}`);
  return names as Location[];
}
