import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '@perfwatch/common';
import { parsePagesList, readPagesInput, siteByOrigin, siteOriginOf } from './site-pages-input.ts';

const SHOP = 'https://shop.example';

describe('siteOriginOf', () => {
  it.each([
    ['https://shop.example', SHOP],
    ['https://Shop.EXAMPLE/', SHOP],
    ['https://shop.example:443', SHOP],
    ['http://shop.example:80/', 'http://shop.example'],
    ['http://127.0.0.1:8081', 'http://127.0.0.1:8081'],
  ])('%s is the site %s', (given, origin) => {
    expect(siteOriginOf(given)).toBe(origin);
  });

  it.each([
    ['shop.example', /--site must be an origin/],
    ['ftp://shop.example', /--site must be an origin/],
    ['https://shop.example/product/3', /give https:\/\/shop.example$/],
    ['https://shop.example/?a=1', /give https:\/\/shop.example$/],
    ['https://user:pw@shop.example', /give https:\/\/shop.example$/],
  ])('%s is a usage error', (given, message) => {
    expect(() => siteOriginOf(given)).toThrow(UsageError);
    expect(() => siteOriginOf(given)).toThrow(message);
  });
});

describe('siteByOrigin', () => {
  const sites = [
    { id: 'a', origin: 'https://blog.example' },
    { id: 'b', origin: SHOP },
  ];

  it('finds the site whose origin is the one given', () => {
    expect(siteByOrigin(sites, SHOP).id).toBe('b');
  });

  it('names the sites there are when none is at that origin, as a usage error', () => {
    expect(() => siteByOrigin(sites, 'https://shop.example:8443')).toThrow(
      'no site https://shop.example:8443 in perfwatch (your sites: https://blog.example, https://shop.example)',
    );
    expect(() => siteByOrigin([], SHOP)).toThrow(UsageError);
  });
});

describe('parsePagesList', () => {
  it('reads one page a line: comments and blank lines skipped, paths resolved, each page once', () => {
    const text = [
      '# pages this change touches',
      '',
      'https://shop.example/product/3',
      '  /product/4  ',
      '/search?q=shoes',
      'https://SHOP.example:443/product/3#reviews',
      '\t# an indented comment',
      '/',
    ].join('\r\n');
    expect(parsePagesList(text, SHOP, 'pages.txt')).toEqual([
      'https://shop.example/product/3',
      'https://shop.example/product/4',
      'https://shop.example/search?q=shoes',
      'https://shop.example/',
    ]);
  });

  it.each([
    ['/a\nhttps://other.example/x', 'pages.txt line 2: https://other.example/x is not a page of https://shop.example'],
    ['//other.example/x', 'pages.txt line 1: //other.example/x is neither an absolute http(s) URL nor a path'],
    ['product/3', 'pages.txt line 1: product/3 is neither an absolute http(s) URL nor a path starting with /'],
    ['mailto:me@shop.example', 'line 1: mailto:me@shop.example is neither'],
    ['# only a comment\n\n', 'pages.txt lists no page'],
    ['', 'pages.txt lists no page'],
  ])('%j is refused: %s', (text, message) => {
    expect(() => parsePagesList(text, SHOP, 'pages.txt')).toThrow(UsageError);
    expect(() => parsePagesList(text, SHOP, 'pages.txt')).toThrow(message);
  });
});

describe('readPagesInput', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'perfwatch-pages-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const noStdin = { stdin: () => Readable.from([]) };

  it('reads a file', async () => {
    const file = join(dir, 'changed.txt');
    await writeFile(file, '/product/1\n/product/2\n');
    expect(await readPagesInput(file, SHOP, noStdin)).toEqual([`${SHOP}/product/1`, `${SHOP}/product/2`]);
  });

  it('reads standard input for -, in chunks split anywhere', async () => {
    const stdin = Readable.from([Buffer.from('/prod'), 'uct/1\n# x\nhttps://shop.exa', Buffer.from('mple/cart\n')]);
    expect(await readPagesInput('-', SHOP, { stdin: () => stdin })).toEqual([`${SHOP}/product/1`, `${SHOP}/cart`]);
  });

  it('names standard input in its errors', async () => {
    await expect(readPagesInput('-', SHOP, { stdin: () => Readable.from(['\n']) })).rejects.toThrow(
      'standard input lists no page',
    );
  });

  it('is a usage error for a file that is not there, or far too large to be a list of pages', async () => {
    await expect(readPagesInput(join(dir, 'missing.txt'), SHOP, noStdin)).rejects.toThrow(
      /--pages .*missing.txt: ENOENT/,
    );
    const big = join(dir, 'big.txt');
    await writeFile(big, '/x\n'.repeat(400_000));
    await expect(readPagesInput(big, SHOP, noStdin)).rejects.toThrow(UsageError);
    await expect(readPagesInput(big, SHOP, noStdin)).rejects.toThrow('larger than 1048576 bytes');
  });
});
