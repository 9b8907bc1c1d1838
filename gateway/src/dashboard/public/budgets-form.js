import { api } from './api.js';
import { h } from './dom.js';
import { field, onSubmit } from './form-fields.js';
import { budgetLine } from './budget-line.js';

// A project's budgets (/v1/budgets) as two lists of KEY=N lines, as `perfwatch update --ci
// --budget` writes them: saving replaces them all (both empty: no budgets).

const asLines = (limits) =>
  Object.entries(limits)
    .map(([key, value]) => `${key}=${value}`)
    .join('\n');

/** KEY=N lines as limits; a value that is no number goes as written, for the API to name. */
function limitsOf(text) {
  const entries = text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [key, value = ''] = line.split(/\s*[=:]\s*/, 2);
      return [key, value !== '' && !Number.isNaN(Number(value)) ? Number(value) : value];
    });
  return Object.fromEntries(entries);
}

export async function budgetsSection(url) {
  const current = await api('budgets', { url });
  const box = (name, label, hint) =>
    field(
      name,
      label,
      h('textarea', { id: `budgets-${name}`, name, rows: 4, spellcheck: 'false' }, asLines(current[name])),
      hint,
    );
  const line = h('div', {}, budgetLine(current));
  const form = h(
    'form',
    { id: 'budgets-form', class: 'card settings' },
    box('budgets', 'Budgets', 'One KEY=N a line: performance=90 (a score floor), lcp=2500 (ms), bytes=…, cls=0.1.'),
    box('maxRegression', 'Allowed regressions', 'One KEY=N a line: score points, or percent for metrics.'),
    h('button', { type: 'submit' }, 'Save budgets'),
  );
  onSubmit(
    form,
    () =>
      api('budgets', {
        url,
        budgets: limitsOf(form.elements.namedItem('budgets').value),
        maxRegression: limitsOf(form.elements.namedItem('maxRegression').value),
      }),
    (saved) => line.replaceChildren(budgetLine(saved)),
  );
  return h('section', { id: 'budgets' }, h('h2', {}, 'Budgets'), line, form);
}
