import { formatMs } from './dom.js';

// What the dashboard reads from a stored Lighthouse result (LHR), and how it shows it.

export const CATEGORIES = [
  ['performance', 'Performance'],
  ['accessibility', 'Accessibility'],
  ['best-practices', 'Best practices'],
  ['seo', 'SEO'],
];
/** CLS to three decimals, or a dash when not measured. */
export const formatCls = (v) => (v === null || v === undefined ? '—' : v.toFixed(3));
export const METRICS = [
  ['largest-contentful-paint', 'LCP', formatMs],
  ['first-contentful-paint', 'FCP', formatMs],
  ['total-blocking-time', 'TBT', formatMs],
  ['cumulative-layout-shift', 'CLS', formatCls],
  ['speed-index', 'Speed Index', formatMs],
];
export const categoryScore = (lhr, id) =>
  typeof lhr.categories?.[id]?.score === 'number' ? Math.round(lhr.categories[id].score * 100) : null;
export const auditValue = (lhr, id) => lhr.audits?.[id]?.numericValue ?? null;
/** A 0–100 score as a whole number. */
export const formatScore = (v) => String(Math.round(v));
