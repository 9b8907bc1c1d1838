import type { ThirdPartySummary } from '@perfwatch/common';
import { forEachMember, skipSpace, valueEnd } from '../snapshots/result-audits.ts';
import { thirdPartiesOf } from './third-parties.ts';

/** The parts of a result thirdPartiesOf reads; the rest (most of a result) is stepped over. */
const READ_AUDITS = new Set(['third-parties-insight', 'network-requests', 'long-tasks', 'bootup-time']);
const OPEN_BRACE = '{'.charCodeAt(0);

/**
 * A stored result's third parties, read off its JSON as auditsOfJson reads its audits: only
 * `entities` and the four audits thirdPartiesOf needs are parsed, not the whole result (up to
 * 16 MiB, several times that as objects). Bytes that are no JSON object give none.
 */
export function thirdPartiesOfJson(json: Uint8Array): ThirdPartySummary[] {
  const text = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  const parse = (at: number, end: number): unknown => JSON.parse(text.toString('utf8', at, end));
  const picked: { entities?: unknown; audits: Record<string, unknown> } = { audits: {} };
  try {
    forEachMember(text, skipSpace(text, 0), (name, at) => {
      if (name === 'entities') {
        const end = valueEnd(text, at);
        picked.entities = parse(at, end);
        return end;
      }
      if (name !== 'audits' || text[at] !== OPEN_BRACE) return undefined;
      picked.audits = {};
      return forEachMember(text, at, (id, value) => {
        if (!READ_AUDITS.has(id)) return undefined;
        const end = valueEnd(text, value);
        picked.audits[id] = parse(value, end);
        return end;
      });
    });
  } catch {
    return [];
  }
  return thirdPartiesOf(picked);
}
