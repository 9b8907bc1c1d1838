import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { isOneJsonObject } from './json-object-text.ts';

/** The reference: JSON.parse takes it, and it is an object. */
function reference(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

describe('isOneJsonObject', () => {
  it('agrees with JSON.parse on real results and on texts that try to break out of an object', () => {
    const lhr = JSON.stringify(loadLhr('mobile', 1));
    const texts = [
      lhr,
      ` \n${JSON.stringify(loadLhr('desktop', 2), null, 2)}\t`,
      '{}',
      '{"a":1},"missing":[{"device":"mobile"}]',
      '{"lighthouseVersion":"13"}},"missing":[{"device":"mobile"',
      '{"a":1}{"b":2}',
      '{"a":"\\u00e9\\n\\"}"}',
      '{"a":"\\x"}',
      '{"a":"\u0001"}',
      '{"a":01}',
      '{"a":-0.5e+10,"b":[1,2,[3,{"c":null}]],"d":true,"e":false}',
      '{"a":1.}',
      '{"a":[1,]}',
      '{"a":1,}',
      '{,}',
      '[1,2]',
      '"text"',
      '{"a" 1}',
      '{"a":tru}',
      '{"a":"unterminated}',
      `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`,
      lhr.slice(0, -1),
      `${lhr.slice(0, -1)},"injected":1}`,
    ];
    for (const text of texts) expect(isOneJsonObject(Buffer.from(text)), text.slice(0, 60)).toBe(reference(text));
  });

  it('refuses bytes that are not UTF-8, wherever they stand', () => {
    const valid = Buffer.from('{"a":"é","b":[1]}');
    expect(isOneJsonObject(valid)).toBe(true);
    for (const bad of [[0xff], [0xc3], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]) {
      expect(
        isOneJsonObject(Buffer.concat([Buffer.from('{"a":"'), Buffer.from(bad), Buffer.from('"}')])),
        bad.join(' '),
      ).toBe(false);
    }
  });

  it('agrees with JSON.parse on generated JSON and on that JSON cut and spliced at random', () => {
    const object = fc.dictionary(fc.string(), fc.jsonValue()).map((o) => JSON.stringify(o));
    fc.assert(
      fc.property(fc.oneof(object, fc.json()), (text) => isOneJsonObject(Buffer.from(text)) === reference(text)),
      { numRuns: 2_000 },
    );
    const mutated = fc.tuple(object, fc.nat(), fc.nat(), fc.string({ maxLength: 3 })).map(([text, at, cut, insert]) => {
      const i = at % (text.length + 1);
      return text.slice(0, i) + insert + text.slice(Math.min(text.length, i + (cut % 3)));
    });
    fc.assert(
      fc.property(mutated, (text) => isOneJsonObject(Buffer.from(text)) === reference(text)),
      { numRuns: 5_000 },
    );
  });
});
