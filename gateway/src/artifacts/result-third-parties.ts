import type { ThirdPartySummary } from '@perfwatch/common';
import { forEachMember, skipSpace, valueEnd } from '../snapshots/result-audits.ts';
import { thirdPartiesOf } from './third-parties.ts';

/** The audits thirdPartiesOf reads; of each only `details.items`. */
const READ_AUDITS = new Set(['third-parties-insight', 'network-requests', 'long-tasks', 'bootup-time']);

/**
 * What is parsed of each table (and of `entities`): a real page's tables have tens to a few
 * thousand rows of under 1 kB (an insight row with its URLs a few kB), but a stored result may
 * hold 16 MiB of one table; parsed whole, that is several times its size in objects, in a place
 * for heavy reads that allows 32 MiB. Rows past these bounds are left out.
 */
export const THIRD_PARTY_READ_LIMITS = { maxItems: 10_000, maxItemBytes: 64 * 1024, maxTableBytes: 2 * 1024 * 1024 };

const [OPEN_BRACE, OPEN_BRACKET, CLOSE_BRACKET, COMMA] = [...'{[],'].map((c) => c.charCodeAt(0)) as [
  number,
  number,
  number,
  number,
];

/** The elements of the array at `at`, each parsed on its own, within THIRD_PARTY_READ_LIMITS. */
function boundedItems(text: Buffer, at: number): unknown[] {
  const { maxItems, maxItemBytes, maxTableBytes } = THIRD_PARTY_READ_LIMITS;
  const items: unknown[] = [];
  if (text[at] !== OPEN_BRACKET) return items;
  let i = skipSpace(text, at + 1);
  let parsed = 0;
  while (text[i] !== CLOSE_BRACKET && items.length < maxItems) {
    const end = valueEnd(text, i);
    if (end - i <= maxItemBytes && parsed + end - i <= maxTableBytes) {
      items.push(JSON.parse(text.toString('utf8', i, end)));
      parsed += end - i;
    }
    i = skipSpace(text, end);
    if (text[i] !== COMMA) break;
    i = skipSpace(text, i + 1);
  }
  return items;
}

/** An audit reduced to `{details: {items}}`, its items bounded. */
function auditItems(text: Buffer, at: number): { details: { items: unknown[] } } | undefined {
  if (text[at] !== OPEN_BRACE) return undefined;
  let items: unknown[] | undefined;
  forEachMember(text, at, (field, value) => {
    if (field !== 'details' || text[value] !== OPEN_BRACE) return undefined;
    return forEachMember(text, value, (name, v) => {
      if (name !== 'items') return undefined;
      items = boundedItems(text, v);
      return valueEnd(text, v);
    });
  });
  return items ? { details: { items } } : undefined;
}

/**
 * A stored result's third parties, read off its JSON as auditsOfJson reads its audits: only
 * `entities` and the tables of the four audits thirdPartiesOf needs are parsed, row by row and
 * bounded, never the whole result (up to 16 MiB). Bytes that are no JSON object give none.
 */
export function thirdPartiesOfJson(json: Uint8Array): ThirdPartySummary[] {
  const text = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  const picked: { entities?: unknown[]; audits: Record<string, unknown> } = { audits: {} };
  try {
    forEachMember(text, skipSpace(text, 0), (name, at) => {
      if (name === 'entities') picked.entities = boundedItems(text, at);
      if (name !== 'audits' || text[at] !== OPEN_BRACE) return undefined;
      picked.audits = {};
      return forEachMember(text, at, (id, value) => {
        if (READ_AUDITS.has(id)) picked.audits[id] = auditItems(text, value);
        return undefined;
      });
    });
  } catch {
    return [];
  }
  return thirdPartiesOf(picked);
}
