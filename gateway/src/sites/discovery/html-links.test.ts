import { describe, expect, it } from 'vitest';
import { readLinks } from './html-links.ts';

async function links(html: string, page = 'https://shop.example/shoes/') {
  const found: string[] = [];
  async function* body() {
    for (let i = 0; i < html.length; i += 5) yield Buffer.from(html.slice(i, i + 5));
  }
  await readLinks(body(), new URL(page), (url) => found.push(url.href) < 3);
  return found;
}

describe('readLinks', () => {
  it('resolves each <a href> against the page or its <base>, without fragments, until told to stop', async () => {
    expect(await links('<a href="red#top">r</a><A HREF=" /bag ">b</A><link href="/x.css"><a>none</a>')).toEqual([
      'https://shop.example/shoes/red',
      'https://shop.example/bag',
    ]);
    expect(
      await links(
        '<base href="https://shop.example/en/"><a href="a"></a><a href="b"></a><a href="c"></a><a href="d"></a>',
      ),
    ).toEqual(['https://shop.example/en/a', 'https://shop.example/en/b', 'https://shop.example/en/c']);
  });
});
