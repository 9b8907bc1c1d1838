import { h } from './dom.js';

// A project's budgets (perfwatch admin set-budgets, /v1/budgets) in one line of words.

const BUDGET_LABELS = {
  performance: 'performance ≥',
  accessibility: 'accessibility ≥',
  'best-practices': 'best practices ≥',
  seo: 'SEO ≥',
  lcp: 'LCP ≤',
  fcp: 'FCP ≤',
  tbt: 'TBT ≤',
  cls: 'CLS ≤',
  si: 'Speed Index ≤',
  tti: 'TTI ≤',
  ttfb: 'server response ≤',
  bytes: 'total bytes ≤',
};
const budgetValue = (key, value) =>
  ['performance', 'accessibility', 'best-practices', 'seo', 'cls'].includes(key)
    ? String(value)
    : key === 'bytes'
      ? `${value} B`
      : `${value} ms`;

/** What every snapshot of the project is checked against (perfwatch admin set-budgets, /v1/budgets). */
export function budgetLine({ budgets, maxRegression }) {
  const parts = [
    ...Object.entries(budgets).map(([key, value]) => `${BUDGET_LABELS[key] ?? key} ${budgetValue(key, value)}`),
    ...Object.entries(maxRegression).map(
      ([key, value]) =>
        `${key} regresses at most ${value}${['performance', 'accessibility', 'best-practices', 'seo'].includes(key) ? ' points' : ' %'}`,
    ),
  ];
  return h(
    'p',
    { class: 'meta budgets', id: 'budgets' },
    parts.length > 0
      ? `Budgets: ${parts.join(' · ')}`
      : 'No budgets: set them with perfwatch admin set-budgets or /v1/budgets.',
  );
}
