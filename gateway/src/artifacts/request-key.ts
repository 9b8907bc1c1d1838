/**
 * What two snapshots' requests are matched by: the URL without what changes between deploys
 * or page loads while the resource stays the same one (docs/artifacts.md, "Comparing requests").
 * - the fragment, never sent;
 * - query parameters that bust caches: by name (`v`, `ver`, `version`, `_`, `t`, `ts`, `cb`,
 *   `timestamp`, `rnd`, `rand`, `random`, `cachebust`, `cachebuster`, `bust`, `nocache`, `rev`,
 *   `hash`), or by value (an epoch time of 10 or 13 digits, a hex hash of 8 or more characters with
 *   letters and digits both);
 * - the others sorted by name, so their order does not matter;
 * - a content hash in the file name (`app.3f9a12c4.js`, `chunk-5e1d0a9b7c.css`): `app.#.js`.
 * A string that is no URL is its own key.
 */

const BUSTER_NAMES = new Set([
  'v',
  'ver',
  'version',
  '_',
  't',
  'ts',
  'cb',
  'timestamp',
  'rnd',
  'rand',
  'random',
  'cachebust',
  'cachebuster',
  'bust',
  'nocache',
  'rev',
  'hash',
]);
const EPOCH = /^(?:\d{10}|\d{13})$/;
const HEX_HASH = /^(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}$/i;
/** A hash between the name and the extension, after a `.` or `-` (webpack, Vite, Rails). */
const FILE_HASH = /([.-])(?=[0-9a-z_]*\d)(?=[0-9a-z_]*[a-z])[0-9a-z_]{8,}(?=\.[a-z0-9]+$)/i;

const busts = (name: string, value: string) =>
  BUSTER_NAMES.has(name.toLowerCase()) || EPOCH.test(value) || HEX_HASH.test(value);

export function requestKey(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return url.split('#', 1)[0]!;
  const kept = [...parsed.searchParams].filter(([name, value]) => !busts(name, value));
  kept.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const slash = parsed.pathname.lastIndexOf('/');
  const file = parsed.pathname.slice(slash + 1).replace(FILE_HASH, '$1#');
  const query = new URLSearchParams(kept).toString();
  return `${parsed.origin}${parsed.pathname.slice(0, slash + 1)}${file}${query ? `?${query}` : ''}`;
}
