import { formatMs, h } from './dom.js';

// A Lighthouse result's filmstrip (its `screenshot-thumbnails` audit) and final screenshot: a
// navigation's load, or what a flow's timespan saw happen.

/** The frames and final screenshot of `lhr`, when it has them; `label` names what they show. */
export function filmstrip(lhr, label = 'How the page loaded') {
  const frames = lhr.audits?.['screenshot-thumbnails']?.details?.items ?? [];
  const final = lhr.audits?.['final-screenshot']?.details?.data;
  if (frames.length === 0 && !final) return null;
  return h(
    'div',
    { class: 'filmstrip-box' },
    h(
      'ol',
      { class: 'filmstrip', 'aria-label': label },
      frames.map((frame) =>
        h(
          'li',
          { 'data-timing': String(frame.timing) },
          h('img', { src: frame.data, alt: `The page at ${Math.round(frame.timing)} ms` }),
          h('span', {}, formatMs(frame.timing)),
        ),
      ),
    ),
    final ? h('img', { class: 'final-screenshot', src: final, alt: 'The page at the end' }) : null,
  );
}
