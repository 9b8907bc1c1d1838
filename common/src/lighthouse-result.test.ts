import { describe, expect, it } from 'vitest';
import { loadLhr } from '../../test/support/lhr-fixtures.ts';
import { trimLighthouseResult } from './lighthouse-result.ts';

describe('trimLighthouseResult', () => {
  it('drops screenshots and the i18n message table and keeps everything measured', () => {
    const lhr = loadLhr('mobile', 1);
    lhr['fullPageScreenshot'] = { screenshot: { data: 'data:image/webp;base64,AAAA' } };
    lhr.audits['final-screenshot'] = {
      id: 'final-screenshot',
      score: null,
      details: { type: 'screenshot', data: 'data:image/jpeg;base64,' + 'A'.repeat(50_000) },
    };
    const trimmed = trimLighthouseResult(lhr);
    expect(trimmed['fullPageScreenshot']).toBeUndefined();
    expect(trimmed.audits['final-screenshot']!.details).toBeUndefined();
    expect((trimmed['i18n'] as Record<string, unknown>)['icuMessagePaths']).toBeUndefined();
    expect(trimmed.categories).toEqual(lhr.categories);
    expect(trimmed.audits['first-contentful-paint']).toEqual(lhr.audits['first-contentful-paint']);
    expect(JSON.stringify(trimmed).length).toBeLessThan(JSON.stringify(lhr).length - 50_000);
    // The input is left as it was.
    expect(lhr['fullPageScreenshot']).toBeDefined();
  });

  it('keeps screenshots when asked to', () => {
    const lhr = loadLhr('desktop', 1);
    lhr.audits['final-screenshot'] = {
      id: 'final-screenshot',
      score: null,
      details: { type: 'screenshot', data: 'x' },
    };
    expect(trimLighthouseResult(lhr, { keepScreenshots: true }).audits['final-screenshot']!.details).toEqual({
      type: 'screenshot',
      data: 'x',
    });
  });
});
