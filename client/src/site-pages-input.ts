import { createReadStream } from 'node:fs';
import { UsageError } from '@perfwatch/common';

/** A CI job's list of changed pages is small; a file far larger is a mistake (a build log, a binary). */
const MAX_PAGES_BYTES = 1024 * 1024;

/**
 * `https://shop.example` for `https://Shop.Example:443/`: the scheme, host and port a site is
 * stored by (lower-case host, default port dropped). A path, query or credentials is a usage
 * error, as the API refuses them for an origin: `--site` names a site, not a page of it.
 */
export function siteOriginOf(text: string): string {
  const url = URL.parse(text);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new UsageError(`--site must be an origin, an absolute http(s) URL such as https://shop.example: ${text}`);
  if (url.username || url.password || url.pathname !== '/' || url.search || /[?#]/.test(text))
    throw new UsageError(`--site is a scheme, host and port alone: give ${url.origin}`);
  return url.origin;
}

/** The site of `origin` among the caller's sites; none is a usage error naming the ones there are. */
export function siteByOrigin<S extends { origin: string }>(sites: readonly S[], origin: string): S {
  // Stored origins went through the API's own normalisation; read them the same way to compare.
  const found = sites.find((site) => URL.parse(site.origin)?.origin === origin);
  if (found) return found;
  const known = sites.map((site) => site.origin).join(', ');
  throw new UsageError(
    `no site ${origin} in perfwatch${known ? ` (your sites: ${known})` : ''}: add it with POST /v1/sites first`,
  );
}

/**
 * The pages of a `--pages` list, one a line: blank lines and `#` comments skipped, a path
 * (`/product/3`) resolved against the site's origin, each page once in the order given. A line
 * that is no page of the site is a usage error naming its line, so a CI job learns it before
 * any run.
 */
export function parsePagesList(text: string, origin: string, source: string): string[] {
  const pages = new Set<string>();
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const url = line.startsWith('/') && !line.startsWith('//') ? URL.parse(line, origin) : URL.parse(line);
    const where = `${source} line ${index + 1}`;
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new UsageError(`${where}: ${line} is neither an absolute http(s) URL nor a path starting with /`);
    if (url.origin !== origin) throw new UsageError(`${where}: ${url.href} is not a page of ${origin}`);
    url.hash = '';
    pages.add(url.href);
  }
  if (pages.size === 0) throw new UsageError(`${source} lists no page (one URL or path a line; # starts a comment)`);
  return [...pages];
}

/** Where `--pages` reads from: a file, or `-` for standard input. */
export interface PagesSource {
  /** Standard input, opened only for `-` (a process's stdin touched is a handle held). */
  stdin(): AsyncIterable<string | Uint8Array>;
}

/** The pages of `--pages FILE` (or `-`, standard input), checked against the site's origin. */
export async function readPagesInput(name: string, origin: string, { stdin }: PagesSource): Promise<string[]> {
  const source = name === '-' ? 'standard input' : name;
  let text: string;
  try {
    text = await readBounded(name === '-' ? stdin() : createReadStream(name));
  } catch (error) {
    throw new UsageError(`--pages ${source}: ${(error as Error).message}`);
  }
  return parsePagesList(text, origin, source);
}

/** A stream's text, refused past MAX_PAGES_BYTES (a CLI's input file is small; a huge one is a mistake). */
export async function readBounded(stream: AsyncIterable<string | Uint8Array>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
    size += buffer.length;
    if (size > MAX_PAGES_BYTES) throw new Error(`larger than ${MAX_PAGES_BYTES} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
