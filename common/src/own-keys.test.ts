import { describe, expect, it } from 'vitest';
import { budgetFileSchema, parseLimit } from './budgets.ts';
import { cruxRecordSchema } from './crux.ts';
import { lighthouseResultSchema } from './lighthouse-result.ts';
import { PROTOTYPE_NAMES } from './own-keys.ts';
import { pageAuthSchema } from './page-auth.ts';
import { runDigestSchema } from './run-digest.ts';

// What an agent, a caller or a stored row can key: parsed from JSON text, so `__proto__` is an
// own key as it arrives from the wire.
const parse = (json: string): unknown => JSON.parse(json);
const names = [...PROTOTYPE_NAMES];

describe('prototype names as keys', () => {
  it('covers the names a plain object inherits', () => {
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'])
      expect(PROTOTYPE_NAMES.has(name)).toBe(true);
  });

  it.each(names)('budgets and allowed regressions refuse %s', (name) => {
    const key = JSON.stringify(name);
    expect(budgetFileSchema.safeParse(parse(`{"budgets":{${key}:1}}`)).success).toBe(false);
    expect(budgetFileSchema.safeParse(parse(`{"maxRegression":{"lcp":5,${key}:1}}`)).success).toBe(false);
    expect(() => parseLimit(`${name}=1`)).toThrow();
  });

  it('budgets keep their own keys', () => {
    expect(budgetFileSchema.parse(parse('{"budgets":{"performance":90},"maxRegression":{"lcp":10}}'))).toEqual({
      budgets: { performance: 90 },
      maxRegression: { lcp: 10 },
    });
  });

  it.each(names)('login headers refuse %s', (name) => {
    expect(pageAuthSchema.safeParse(parse(`{"headers":{"X-Ok":"1",${JSON.stringify(name)}:"v"}}`)).success).toBe(false);
  });

  it.each(names)('an agent reply refuses %s as an audit, a category or a KPI field', (name) => {
    const key = JSON.stringify(name);
    const lhr = (audits: string, categories: string) =>
      parse(
        `{"lighthouseVersion":"13.0.0","fetchTime":"2026-11-25T00:00:00Z","finalDisplayedUrl":"https://a.example/","audits":${audits},"categories":${categories}}`,
      );
    expect(lighthouseResultSchema.safeParse(lhr(`{${key}:{"id":"x"}}`, '{}')).success).toBe(false);
    expect(lighthouseResultSchema.safeParse(lhr('{}', `{${key}:{"id":"x","score":1}}`)).success).toBe(false);
    expect(lighthouseResultSchema.safeParse(lhr('{"fcp":{"id":"fcp"}}', '{}')).success).toBe(true);

    const digest = (audits: string, kpiData: string) =>
      parse(
        `{"lhr":{"lighthouseVersion":"13","fetchTime":"t","finalDisplayedUrl":"https://a.example/","runWarnings":[],"categories":{},"audits":${audits}},"elementCount":null,"kpiVersion":1,"kpis":[{"section":"SECURITY","kpi":"k","data":${kpiData}}]}`,
      );
    expect(runDigestSchema.safeParse(digest('{}', '{"ok":1}')).success).toBe(true);
    expect(runDigestSchema.safeParse(digest(`{${key}:{"id":"x"}}`, '{"ok":1}')).success).toBe(false);
    expect(runDigestSchema.safeParse(digest('{}', `{${key}:1}`)).success).toBe(false);

    expect(cruxRecordSchema.safeParse(parse(`{"key":{},"metrics":{${key}:{}}}`)).success).toBe(false);
  });
});
