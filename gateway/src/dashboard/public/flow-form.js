import { ApiError, request } from './api.js';
import { h } from './dom.js';
import { refusedRole } from './form-fields.js';

// A project's user flow (issue 36) as JSON in a text box: GET /v1/projects/flow fills it, saving
// PUTs it whole, removing DELETEs it (its updates measure a navigation of the page again). The
// API's refusal lines name the step ("step 2 "add to cart": …"): they are listed under the box.

const EXAMPLE = {
  steps: [
    { kind: 'navigate', name: 'product' },
    { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click', text: 'Add to cart' }] },
    { kind: 'snapshot', name: 'cart' },
  ],
};

const asText = (flow) => (flow ? JSON.stringify(flow, null, 2) : '');

/** What went wrong, as lines: a 400's each, a 403 as the caller's role, anything else its message. */
function refusalLines(error) {
  if (!(error instanceof ApiError)) return [error.message];
  if (error.status === 403) return [refusedRole(error)];
  return error.status === 400 && error.errors.length > 0 ? [error.summary, ...error.errors] : [error.message];
}

/** The editor's state line and refusal list, and how an action's outcome shows in them. */
function outcomeArea() {
  const state = h('p', { class: 'saved', id: 'flow-state', role: 'status' });
  const errors = h('ul', { class: 'flow-errors', id: 'flow-errors', role: 'alert', hidden: true });
  const run = async (button, action) => {
    button.disabled = true;
    state.textContent = '';
    errors.replaceChildren();
    errors.hidden = true;
    try {
      state.textContent = await action();
    } catch (error) {
      errors.replaceChildren(...refusalLines(error).map((line) => h('li', {}, line)));
      errors.hidden = false;
    } finally {
      button.disabled = false;
    }
  };
  return { state, errors, run };
}

export async function flowSection(url) {
  const { flow } = await request('GET', 'projects/flow', { url });
  const text = h(
    'textarea',
    { id: 'flow-json', name: 'flow', rows: 14, spellcheck: 'false', placeholder: asText(EXAMPLE) },
    asText(flow),
  );
  const { state, errors, run } = outcomeArea();
  const save = h('button', { type: 'submit' }, 'Save flow');
  const remove = h('button', { type: 'button', id: 'flow-remove', class: 'secondary' }, 'Remove flow');
  const form = h(
    'form',
    { id: 'flow-form', class: 'card settings' },
    h('label', { for: 'flow-json' }, 'Steps (JSON)'),
    h(
      'p',
      { class: 'hint' },
      'navigate {name, url?}, timespan {name, actions: [click|type|press|scroll|waitFor|select]}, snapshot {name}. Empty: updates measure the page as a navigation.',
    ),
    text,
    errors,
    h('p', { class: 'actions' }, save, ' ', remove),
    state,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    run(save, async () => {
      let parsed;
      try {
        parsed = JSON.parse(text.value);
      } catch (error) {
        throw new Error(`Not JSON: ${error.message}`);
      }
      const answer = await request('PUT', 'projects/flow', { url, flow: parsed });
      text.value = asText(answer.flow);
      return 'Flow saved.';
    });
  });
  remove.addEventListener('click', () =>
    run(remove, async () => {
      await request('DELETE', 'projects/flow', { url });
      text.value = '';
      return 'Flow removed: updates measure the page as a navigation.';
    }),
  );
  return h('section', { id: 'flow' }, h('h2', {}, 'User flow'), form);
}
