import { loadTimeSavingMs, type LighthouseResult } from '@perfwatch/common';

/** What a comparison reads of one audit of a result. */
export interface AuditSummary {
  /** The audit's title, or its id when it has none. */
  title: string;
  /** Lighthouse's score, 0–1; null when the audit is not scored. */
  score: number | null;
  /** The load time the audit says could be saved (loadTimeSavingMs): 0 unless it fails. */
  savingMs: number;
}

/**
 * Audits a comparison reads of one result. A Lighthouse result has about 160 (the fixtures: 161);
 * a result made to hold hundreds of thousands would make the comparison's memory theirs.
 */
export const MAX_COMPARED_AUDITS = 1_000;
/** Ids and titles are cut here: Lighthouse's are at most 31 and 130 characters (the fixtures). */
export const MAX_COMPARED_TEXT_CHARS = 200;

const cut = (text: string) =>
  text.length > MAX_COMPARED_TEXT_CHARS ? `${text.slice(0, MAX_COMPARED_TEXT_CHARS)}…` : text;

/** An audit as a result holds it, reduced to what a comparison reads. */
function summary(id: string, audit: { title?: unknown; score?: unknown; lcp?: unknown; fcp?: unknown }): AuditSummary {
  const score = typeof audit.score === 'number' ? audit.score : null;
  const savings: Record<string, number> = {};
  if (typeof audit.lcp === 'number') savings['LCP'] = audit.lcp;
  if (typeof audit.fcp === 'number') savings['FCP'] = audit.fcp;
  return {
    title: cut(typeof audit.title === 'string' ? audit.title : id),
    score,
    savingMs: loadTimeSavingMs({ id, score, metricSavings: savings }),
  };
}

/** The audits of a result already read (the same summaries auditsOfJson takes from its bytes). */
export function auditsOfResult(lhr: LighthouseResult): Map<string, AuditSummary> {
  const audits = new Map<string, AuditSummary>();
  for (const [id, audit] of Object.entries(lhr.audits)) {
    if (audits.size >= MAX_COMPARED_AUDITS) break;
    // What the schema leaves unchecked, as auditsOfJson does: an audit that is no object is none.
    if (typeof audit !== 'object' || audit === null || Array.isArray(audit)) continue;
    const savings = audit.metricSavings;
    audits.set(
      cut(id),
      summary(id, { title: audit['title'], score: audit.score, lcp: savings?.['LCP'], fcp: savings?.['FCP'] }),
    );
  }
  return audits;
}

/**
 * The audits of a result from its JSON, read off the bytes without building the result: parsing
 * a 16 MiB result (the largest the gateway takes from an agent) builds several times its size in
 * objects, for a comparison that reads a title and three numbers of each audit. Only those are
 * decoded; the rest (details, most of a result) is stepped over. The bytes must be one JSON
 * object (storedResultJson checked them). A name given twice counts as JSON.parse counts it: the
 * last one.
 */
export function auditsOfJson(json: Uint8Array): Map<string, AuditSummary> {
  let audits = new Map<string, AuditSummary>();
  const text = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  forEachMember(text, skipSpace(text, 0), (name, at) => {
    if (name !== 'audits') return undefined;
    audits = new Map();
    if (text[at] !== OPEN_BRACE) return undefined;
    return forEachMember(text, at, (id, value) => {
      const key = cut(id);
      if (text[value] !== OPEN_BRACE) return void audits.delete(key);
      if (audits.size >= MAX_COMPARED_AUDITS && !audits.has(key)) return undefined;
      const audit: { title?: unknown; score?: unknown; lcp?: unknown; fcp?: unknown } = {};
      const end = forEachMember(text, value, (field, v) => {
        if (field === 'title') audit.title = text[v] === QUOTE ? stringAt(text, v) : undefined;
        else if (field === 'score') audit.score = scalarAt(text, v);
        else if (field === 'metricSavings') {
          audit.lcp = audit.fcp = undefined;
          if (text[v] === OPEN_BRACE)
            return forEachMember(text, v, (metric, m) => {
              if (metric === 'LCP') audit.lcp = scalarAt(text, m);
              else if (metric === 'FCP') audit.fcp = scalarAt(text, m);
              return undefined;
            });
        }
        return undefined;
      });
      audits.set(key, summary(id, audit));
      return end;
    });
  });
  return audits;
}

const [OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, QUOTE, BACKSLASH, COMMA, COLON] = [...'{}[]"\\,:'].map(
  (c) => c.charCodeAt(0),
) as [number, number, number, number, number, number, number, number];

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

export function skipSpace(text: Buffer, i: number): number {
  while (isSpace(text[i])) i++;
  return i;
}

/** Names longer than this are read only as far as needed to tell them apart from the few compared. */
const NAME_BYTES = 64;

/**
 * Calls `visit` with each member's name and the index of its value, for the object at `at`;
 * returns the index after the object. A value `visit` read through, it returns the end of; any
 * other is stepped over.
 */
export function forEachMember(
  text: Buffer,
  at: number,
  visit: (name: string, value: number) => number | undefined,
): number {
  let i = skipSpace(text, at + 1);
  if (text[i] === CLOSE_BRACE) return i + 1;
  for (;;) {
    const nameEnd = stringEnd(text, i);
    const name =
      nameEnd - i <= NAME_BYTES ? (JSON.parse(text.toString('utf8', i, nameEnd)) as string) : stringAt(text, i);
    i = skipSpace(text, nameEnd);
    if (text[i] !== COLON) throw new Error('not a JSON object');
    const value = skipSpace(text, i + 1);
    i = skipSpace(text, visit(name, value) ?? valueEnd(text, value));
    if (text[i] === CLOSE_BRACE) return i + 1;
    if (text[i] !== COMMA) throw new Error('not a JSON object');
    i = skipSpace(text, i + 1);
  }
}

/** The index after the string starting at `at` (its quote). */
function stringEnd(text: Buffer, at: number): number {
  for (let i = at + 1; i < text.byteLength; i++) {
    const c = text[i];
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i + 1;
  }
  throw new Error('not a JSON object');
}

/** The index after the value starting at `at`. */
export function valueEnd(text: Buffer, at: number): number {
  const first = text[at];
  if (first === QUOTE) return stringEnd(text, at);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    let i = at;
    while (
      i < text.byteLength &&
      !isSpace(text[i]) &&
      text[i] !== COMMA &&
      text[i] !== CLOSE_BRACE &&
      text[i] !== CLOSE_BRACKET
    )
      i++;
    return i;
  }
  let depth = 0;
  for (let i = at; i < text.byteLength; i++) {
    const c = text[i];
    if (c === QUOTE) i = stringEnd(text, i) - 1;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return i + 1;
  }
  throw new Error('not a JSON object');
}

/** A number, null, true or false at `at`, as JSON.parse reads it; undefined for anything else. */
function scalarAt(text: Buffer, at: number): unknown {
  const first = text[at];
  if (first === QUOTE || first === OPEN_BRACE || first === OPEN_BRACKET) return undefined;
  return JSON.parse(text.toString('latin1', at, valueEnd(text, at)));
}

/**
 * The string at `at` (its quote), decoded no further than a comparison shows it: a string of a
 * million characters costs its first few hundred. The cut falls between characters or escapes.
 */
function stringAt(text: Buffer, at: number): string {
  const enough = at + 1 + 6 * (MAX_COMPARED_TEXT_CHARS + 1);
  let i = at + 1;
  while (i < text.byteLength && i < enough) {
    const c = text[i]!;
    if (c === QUOTE) return JSON.parse(text.toString('utf8', at, i + 1)) as string;
    // An escape is two bytes, or six for \uXXXX; a character one to four, by its first byte.
    i += c === BACKSLASH ? (text[i + 1] === 0x75 ? 6 : 2) : c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
  }
  return `${JSON.parse(`${text.toString('utf8', at, i)}"`) as string}…`;
}
