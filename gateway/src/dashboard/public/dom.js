// Builds DOM from data without innerHTML: every URL, name and message shown here comes from
// users and stored results, so nothing is parsed as markup.

/** h('a', { href: '#/x', class: 'link' }, 'text', child…) */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  element.append(
    ...children
      .flat()
      .filter((child) => child !== null && child !== undefined && child !== false)
      .map((child) => (child instanceof Node ? child : String(child))),
  );
  return element;
}

const SVG = 'http://www.w3.org/2000/svg';

/** The same for SVG elements. */
export function s(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  setAttributes(element, attributes);
  element.append(
    ...children
      .flat()
      .filter((child) => child !== null && child !== undefined)
      .map((child) => (child instanceof Node ? child : String(child))),
  );
  return element;
}

function setAttributes(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
}

/** Lighthouse's colour bands: 90 and above good, 50 to 89 average, below 50 poor. */
export function scoreClass(score) {
  if (score === null || score === undefined) return 'score-none';
  return score >= 90 ? 'score-good' : score >= 50 ? 'score-average' : 'score-poor';
}

export function formatMs(value) {
  if (value === null || value === undefined) return '—';
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
}

/** Bytes as Lighthouse shows them: B, KiB, MiB. */
export function formatBytes(value) {
  if (value === null || value === undefined) return '—';
  if (value < 1024) return `${Math.round(value)} B`;
  return value < 1024 * 1024 ? `${(value / 1024).toFixed(1)} KiB` : `${(value / 1024 / 1024).toFixed(2)} MiB`;
}
