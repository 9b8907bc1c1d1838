import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { THIRD_PARTY_READ_LIMITS, thirdPartiesOfJson } from './result-third-parties.ts';
import { thirdPartiesOf } from './third-parties.ts';

type Items = { details: { items: Record<string, unknown>[] } };

/** A real result of the fixture site with a third-party script added as Lighthouse 13 reports one. */
function withThirdParty() {
  const lhr = loadLhr('mobile', 2);
  const script = 'https://cdn.widgets.example/widget.js?v=3';
  (lhr['entities'] as unknown[]).push({
    name: 'widgets.example',
    origins: ['https://cdn.widgets.example'],
    isUnrecognized: true,
  });
  (lhr.audits['network-requests'] as unknown as Items).details.items.push({
    url: script,
    transferSize: 48_000,
    entity: 'widgets.example',
  });
  (lhr.audits['third-parties-insight'] as unknown as Items).details.items.push({
    entity: 'widgets.example',
    transferSize: 47_500,
    mainThreadTime: 180.5,
  });
  (lhr.audits['long-tasks'] as unknown as Items).details.items.push({ url: script, duration: 130, startTime: 900 });
  return lhr;
}

describe('thirdPartiesOf', () => {
  it('gives the first party of a real result its requests, bytes, script time and blocking time', () => {
    const lhr = loadLhr('mobile', 2);
    const [first, ...others] = thirdPartiesOf(lhr);
    expect(others).toEqual([]);
    // mobile-2: six requests of 14214+1372+632+421+747+399 bytes; long tasks on app.js (251 ms) and the
    // document (99, 57, 57 ms) block 201+49+7+7 ms; the unattributable one (147 ms) belongs to no one.
    expect(first).toMatchObject({
      entity: '127.0.0.1',
      firstParty: true,
      requests: 6,
      transferSize: 17_785,
      blockingTime: 264,
    });
    // bootup-time: index.html 387.4 ms and app.js 250.8 ms.
    expect(first?.mainThreadTime).toBeCloseTo(638.26, 1);
  });

  it('takes a third party’s bytes and main-thread time from the insight, its blocking time from long tasks', () => {
    const rows = thirdPartiesOf(withThirdParty());
    expect(rows.map((r) => r.entity)).toEqual(['127.0.0.1', 'widgets.example']);
    expect(rows[1]).toEqual({
      entity: 'widgets.example',
      firstParty: false,
      transferSize: 47_500,
      mainThreadTime: 180.5,
      blockingTime: 80,
      requests: 1,
    });
  });

  it('takes the document’s entity as the first party when the result marks none', () => {
    const lhr = withThirdParty();
    lhr['entities'] = [];
    expect(thirdPartiesOf(lhr).map((r) => [r.entity, r.firstParty])).toEqual([
      ['127.0.0.1', true],
      ['widgets.example', false],
    ]);
  });

  it('gives nothing for a result without these audits, or for what is not a result', () => {
    const lhr = loadLhr('desktop', 1);
    for (const id of ['network-requests', 'third-parties-insight', 'long-tasks', 'bootup-time']) delete lhr.audits[id];
    expect(thirdPartiesOf(lhr)).toEqual([]);
    expect(thirdPartiesOf(null)).toEqual([]);
    expect(thirdPartiesOf('lighthouse')).toEqual([]);
    expect(thirdPartiesOf({ audits: { 'long-tasks': { details: 'odd' } } })).toEqual([]);
  });

  it('leaves out an item it cannot read and keeps the others', () => {
    const lhr = withThirdParty();
    (lhr.audits['network-requests'] as unknown as Items).details.items.push({ url: 42 }, { transferSize: 'big' });
    expect(thirdPartiesOf(lhr).find((r) => r.entity === 'widgets.example')?.requests).toBe(1);
  });
});

describe('thirdPartiesOfJson', () => {
  it('reads off a stored result’s bytes what thirdPartiesOf reads of the parsed result', () => {
    const lhr = withThirdParty();
    expect(thirdPartiesOfJson(Buffer.from(JSON.stringify(lhr)))).toEqual(thirdPartiesOf(lhr));
    expect(thirdPartiesOfJson(Buffer.from(JSON.stringify(lhr, null, 2)))).toEqual(thirdPartiesOf(lhr));
  });

  it('parses no more of a table than its bounds, however large the stored table', () => {
    const lhr = withThirdParty();
    const rows = Array.from({ length: 30_000 }, (_, i) => ({
      url: `https://cdn.widgets.example/${i}.js`,
      transferSize: 100,
      entity: 'widgets.example',
    }));
    (lhr.audits['network-requests'] as unknown as Items).details.items.push(...rows);
    const widgets = thirdPartiesOfJson(Buffer.from(JSON.stringify(lhr))).find((r) => r.entity === 'widgets.example');
    expect(widgets?.requests).toBeLessThanOrEqual(THIRD_PARTY_READ_LIMITS.maxItems);
    expect(widgets?.requests).toBeGreaterThan(1000);
  });

  it('gives nothing for bytes that are no JSON object', () => {
    for (const text of ['', 'null', '[1]', '{"audits":', '{"entities":[1,2'])
      expect(thirdPartiesOfJson(Buffer.from(text))).toEqual([]);
  });
});
