/**
 * Route templates inferred from a site's page paths (`/shop/product/:id`). Paths are laid out in
 * a tree of segments; bottom-up, siblings that look alike collapse into one parameter.
 *
 * What varies "across many pages" (a parameter) and what stays a fixed word:
 * - id-like values (a digit anywhere, a UUID, or a slug of three or more words: `blue-denim-jacket`)
 *   become a parameter when at least {@link MIN_IDS} of them sit side by side;
 * - plain words (`about`, `team`, `new-york`) are sections, "a handful of fixed words", unless at
 *   least {@link MIN_WORDS} of them share one shape below a fixed first segment (`/team/alice` … ten
 *   names); a site's top level is never a parameter of plain words (`/about`, `/contact`, `/pricing`…).
 * Ids merge whatever lies below them (one product with a `/reviews` page is `/product/:id/reviews`);
 * words only with the same shape below, so `/shop/product/:id` and `/shop/category/:slug` stay apart.
 */

const MIN_IDS = 3;
const MIN_WORDS = 6;

interface Node {
  children: Map<string, Node>;
  /** Segment values merged into this node when it is a parameter. */
  values: Set<string>;
  /** Paths ending here. */
  paths: Set<string>;
}

const PARAM = ':';

const node = (): Node => ({ children: new Map(), values: new Set(), paths: new Set() });

/** The path's segments, without empty ones: `/blog/` and `/blog` are one page shape. */
function segmentsOf(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '');
}

const isNumber = (value: string) => /^\d+$/.test(value);
const isUuid = (value: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
const isHex = (value: string) => /^[0-9a-f]{8,}$/i.test(value) && /\d/.test(value);

/** A value that names one page among many rather than a section. */
function isIdLike(value: string): boolean {
  return /\d/.test(value) || isUuid(value) || value.split(/[-_]/).filter(Boolean).length >= 3;
}

/** Infers the templates of these paths; the answer maps each template to the paths it covers. */
export function inferTemplates(paths: Iterable<string>): Map<string, string[]> {
  const root = node();
  for (const path of paths) {
    let at = root;
    for (const segment of segmentsOf(path)) {
      let next = at.children.get(segment);
      if (next === undefined) at.children.set(segment, (next = node()));
      at = next;
    }
    at.paths.add(path);
  }
  collapse(root, 0);
  const templates = new Map<string, string[]>();
  collect(root, [], templates);
  return templates;
}

/**
 * A node's shape: the relative templates below it, with parameters unnamed and id-like values
 * taken as parameters (`/docs/intro-to-it/step-1` and `/docs/setup-the-cli/step-2` are one shape
 * even when each section has one page).
 */
function shapeOf(at: Node): string {
  const shapes: string[] = at.paths.size > 0 ? [''] : [];
  for (const [segment, child] of at.children) {
    const name = segment.startsWith(PARAM) || isIdLike(segment) ? PARAM : segment;
    for (const below of shapeOf(child).split('\n')) shapes.push(`/${name}${below}`);
  }
  return [...new Set(shapes)].sort().join('\n');
}

function collapse(at: Node, depth: number): void {
  for (const child of at.children.values()) collapse(child, depth + 1);
  const byShape = new Map<string, string[]>();
  for (const [segment, child] of at.children) {
    if (segment.startsWith(PARAM)) continue;
    const shape = shapeOf(child);
    const same = byShape.get(shape);
    if (same === undefined) byShape.set(shape, [segment]);
    else same.push(segment);
  }
  // Their children are now siblings under one parameter, and may be parameters in turn.
  for (const [shape, segments] of [...byShape].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const words = segments.filter((segment) => !isIdLike(segment));
    if (depth > 0 && words.length >= MIN_WORDS) collapse(merge(at, segments.sort(), shape), depth + 1);
  }
  // Ids are one parameter whatever lies below some of them (`/product/7/reviews`).
  const ids = [...at.children.keys()].filter((segment) => !segment.startsWith(PARAM) && isIdLike(segment));
  if (ids.length >= MIN_IDS) collapse(merge(at, ids.sort(), 'ids'), depth + 1);
}

/** Folds these siblings into one parameter child, keyed by what they share. */
function merge(at: Node, segments: string[], shape: string): Node {
  const key = `${PARAM}${shape}`;
  const param = at.children.get(key) ?? node();
  for (const segment of segments) {
    const child = at.children.get(segment);
    if (child === undefined) continue;
    param.values.add(segment);
    for (const value of child.values) param.values.add(value);
    fold(param, child);
    at.children.delete(segment);
  }
  at.children.set(key, param);
  return param;
}

/** Adds a subtree of the same shape into another. */
function fold(into: Node, from: Node): void {
  for (const path of from.paths) into.paths.add(path);
  for (const [segment, child] of from.children) {
    const existing = into.children.get(segment);
    if (existing === undefined) into.children.set(segment, child);
    else {
      for (const value of child.values) existing.values.add(value);
      fold(existing, child);
    }
  }
}

/** `:id` for numbers, UUIDs and hashes, `:slug` for words; a name taken earlier in the template gets a number. */
function paramName(param: Node, taken: readonly string[]): string {
  const values = [...param.values];
  const base = values.every((value) => isNumber(value) || isUuid(value) || isHex(value)) ? 'id' : 'slug';
  let name = base;
  for (let n = 2; taken.includes(`:${name}`); n += 1) name = `${base}${n.toString()}`;
  return `:${name}`;
}

function collect(at: Node, prefix: string[], templates: Map<string, string[]>): void {
  if (at.paths.size > 0) {
    // Two parameters of one name side by side (ids, and six words of one shape) are one template.
    const template = `/${prefix.join('/')}`;
    templates.set(template, [...(templates.get(template) ?? []), ...at.paths].sort());
  }
  for (const [segment, child] of at.children) {
    const name = segment.startsWith(PARAM) ? paramName(child, prefix) : segment;
    collect(child, [...prefix, name], templates);
  }
}
