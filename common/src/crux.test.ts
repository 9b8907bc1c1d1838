import { describe, expect, it } from 'vitest';
import { assessCoreWebVitals, cruxFormFactor, type CruxRecord } from './crux.ts';

const record = (lcp: number | undefined, inp: number | undefined, cls: string | undefined): CruxRecord => ({
  key: { formFactor: 'PHONE', url: 'https://shop.example/' },
  metrics: {
    ...(lcp === undefined ? {} : { largest_contentful_paint: { percentiles: { p75: lcp } } }),
    ...(inp === undefined ? {} : { interaction_to_next_paint: { percentiles: { p75: inp } } }),
    ...(cls === undefined ? {} : { cumulative_layout_shift: { percentiles: { p75: cls } } }),
  },
});

describe('Core Web Vitals assessment', () => {
  it('passes only when LCP, INP and CLS are all good at p75', () => {
    expect(assessCoreWebVitals(record(2500, 200, '0.10'))).toBe('PASSED');
    expect(assessCoreWebVitals(record(2501, 100, '0.01'))).toBe('FAILED');
    expect(assessCoreWebVitals(record(1000, 201, '0.01'))).toBe('FAILED');
    expect(assessCoreWebVitals(record(1000, 100, '0.11'))).toBe('FAILED');
  });

  it('assesses without INP, and has no data without LCP or CLS or a record', () => {
    expect(assessCoreWebVitals(record(1800, undefined, '0.02'))).toBe('PASSED');
    expect(assessCoreWebVitals(record(undefined, 100, '0.02'))).toBe('NO_DATA');
    expect(assessCoreWebVitals(record(1800, 100, undefined))).toBe('NO_DATA');
    expect(assessCoreWebVitals(null)).toBe('NO_DATA');
  });

  it('maps devices to CrUX form factors', () => {
    expect(cruxFormFactor('mobile')).toBe('PHONE');
    expect(cruxFormFactor('desktop')).toBe('DESKTOP');
  });
});
