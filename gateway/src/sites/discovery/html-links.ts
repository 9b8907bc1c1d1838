import { Parser } from 'htmlparser2';

/**
 * The targets of a page's `<a href>` as it arrives (htmlparser2, the parser sitemaps use too:
 * streaming, lenient as browsers are), resolved against the page's URL or its `<base href>`,
 * without their fragment. `onLink` answers false once it wants no more.
 */
export async function readLinks(
  body: AsyncIterable<Buffer>,
  pageUrl: URL,
  onLink: (url: URL) => boolean,
): Promise<void> {
  let base = pageUrl;
  let wanted = true;
  const parser = new Parser({
    onopentag(name, attributes) {
      const href = attributes['href'];
      if (!wanted || href === undefined) return;
      if (name === 'base') {
        if (URL.canParse(href, pageUrl.href)) base = new URL(href, pageUrl);
        return;
      }
      if (name !== 'a' || !URL.canParse(href.trim(), base.href)) return;
      const url = new URL(href.trim(), base);
      url.hash = '';
      wanted = onLink(url);
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.write(decoder.decode(chunk, { stream: true }));
    if (!wanted) return;
  }
  parser.end();
}
