import { describe, expect, it } from 'vitest';
import { compilePatterns, isPathPattern, pageVerdict, parseRobots } from './page-filter.ts';

describe('pageVerdict', () => {
  const robots = parseRobots(
    'https://shop.example/robots.txt',
    'User-agent: *\nDisallow: /cart\nAllow: /cart/help\n\nuser-agent: Googlebot\nDisallow: /\nSITEMAP: https://shop.example/s.xml\n',
  );
  const rules = {
    origin: 'https://shop.example',
    include: compilePatterns(['/product/*', '/cart/*', '/']),
    exclude: compilePatterns(['/product/:id/reviews']),
    robots,
  };
  const verdict = (url: string) => pageVerdict(new URL(url), rules);

  it('keeps pages of the origin the patterns include and robots.txt allows to `*`', () => {
    expect(verdict('https://shop.example/')).toBe('keep');
    expect(verdict('https://shop.example/product/42?c=red')).toBe('keep');
    expect(verdict('https://shop.example/cart/help')).toBe('keep');
  });

  it('says why the others are left out', () => {
    expect(verdict('https://www.shop.example/product/1')).toBe('other-origin');
    expect(verdict('http://shop.example/product/1')).toBe('other-origin');
    expect(verdict('https://shop.example/product/42/reviews')).toBe('pattern');
    expect(verdict('https://shop.example/blog/x')).toBe('pattern');
    expect(verdict('https://shop.example/cart/checkout')).toBe('robots');
  });

  it("reads robots.txt's Sitemap lines whatever their case", () => {
    expect(robots.getSitemaps()).toEqual(['https://shop.example/s.xml']);
  });

  it('takes URLPattern path patterns and refuses what is none', () => {
    expect(['/product/:id', '/blog/*', '/(en|de)/*', '*'].every(isPathPattern)).toBe(true);
    expect(['product', '/(unclosed', 'https://x/'].some(isPathPattern)).toBe(false);
  });
});
