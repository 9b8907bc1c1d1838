import { describe, expect, it } from 'vitest';
import { compareViewLink } from './compare-link.ts';

describe('compareViewLink', () => {
  it("builds the dashboard's #/compare link with /v1/compare's parameters, always in one order", () => {
    const link = compareViewLink('https://perf.example', {
      to: 'latest',
      from: new Date('2026-11-26T10:00:01.500Z'),
      location: 'london',
      device: 'mobile',
      baseUrl: 'https://shop.example/',
      url: 'https://pr-12.preview.shop.example/?a=1&b=2',
    });
    expect(link).toBe(
      'https://perf.example/#/compare?url=https%3A%2F%2Fpr-12.preview.shop.example%2F%3Fa%3D1%26b%3D2' +
        '&baseUrl=https%3A%2F%2Fshop.example%2F&from=2026-11-26T10%3A00%3A01&to=latest&device=mobile&location=london',
    );
    // What the dashboard reads back (compare-view.js): the fragment's query, by the same names.
    const query = new URLSearchParams(new URL(link).hash.replace(/^#\/compare\?/, ''));
    expect(Object.fromEntries(query)).toEqual({
      url: 'https://pr-12.preview.shop.example/?a=1&b=2',
      baseUrl: 'https://shop.example/',
      from: '2026-11-26T10:00:01',
      to: 'latest',
      device: 'mobile',
      location: 'london',
    });
  });

  it('keeps a path prefix, drops a query or fragment of the server address, and leaves out what is not set', () => {
    const params = { url: 'https://shop.example/', baseUrl: 'https://shop.example/', from: 'latest', to: 'latest' };
    const expected = 'url=https%3A%2F%2Fshop.example%2F&from=latest&to=latest';
    expect(compareViewLink('https://gw.example/perfwatch', params)).toBe(
      `https://gw.example/perfwatch/#/compare?${expected}`,
    );
    expect(compareViewLink('https://gw.example/dashboard/?x=1#/old', params)).toBe(
      `https://gw.example/dashboard/#/compare?${expected}`,
    );
  });
});
