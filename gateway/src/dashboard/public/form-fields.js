import { ApiError } from './api.js';
import { h } from './dom.js';

// The settings pages' form pieces: a labelled field with a place for its own error, and how an
// API refusal is shown — a 400's lines beside the fields they name, a 403 as the caller's role.

/** A labelled field `name` holding `control`, with a hint and a place for the API's refusal of it. */
export function field(name, label, control, hint) {
  return h(
    'div',
    { class: 'field', 'data-field': name },
    h('label', { for: control.id }, label),
    control,
    hint ? h('p', { class: 'hint' }, hint) : null,
    h('p', { class: 'field-error', id: `${control.id}-error`, role: 'alert', hidden: true }),
  );
}

/** Checkboxes named `name`, one per choice, those in `checked` ticked. */
export function checkboxes(name, idPrefix, choices, checked) {
  return h(
    'fieldset',
    { class: 'choices', id: `${idPrefix}-${name}` },
    choices.map((choice) =>
      h(
        'label',
        { class: 'choice' },
        h('input', { type: 'checkbox', name, value: choice, checked: checked.includes(choice) }),
        ` ${choice}`,
      ),
    ),
  );
}

/** The values of the ticked checkboxes named `name` in `form`. */
export const ticked = (form, name) =>
  [...form.querySelectorAll(`input[type=checkbox][name="${name}"]:checked`)].map((input) => input.value);

/** The field an error line of the API names ("runs: …", "locations.0: …", "runs must be …"), or null. */
function fieldOf(line, names) {
  const prefixed = /^([A-Za-z]+)(?:\.[\w-]+)*: /.exec(line);
  if (prefixed && names.includes(prefixed[1])) return prefixed[1];
  return names.find((name) => line.startsWith(`${name} `)) ?? null;
}

/**
 * A 403's words for the caller: the role the API says they have ("you have viewer", "this token
 * has read"), or a ci token's, as "Your role (viewer) cannot change this".
 */
export function refusedRole(error, what = 'change') {
  const reason = error.errors.join(' ');
  const role = /(?:you have|this token has) (\w+)/.exec(reason)?.[1] ?? (/ci token/.test(reason) ? 'ci token' : null);
  return `Your role${role ? ` (${role})` : ''} cannot ${what} this.`;
}

/** Clears what `form` showed of an earlier refusal. */
function clearRefusal(form) {
  for (const p of form.querySelectorAll('.field-error')) {
    p.hidden = true;
    p.textContent = '';
  }
  const top = form.querySelector(':scope > .form-error');
  if (top) top.remove();
}

/** Shows `error` in `form`: a 400's lines by field where one is named, the rest (and any other status) on top. */
function showRefusal(form, error) {
  clearRefusal(form);
  const names = [...form.querySelectorAll('[data-field]')].map((el) => el.dataset.field);
  const general = [];
  if (!(error instanceof ApiError)) general.push(error.message);
  else if (error.status === 403) general.push(refusedRole(error));
  else if (error.status === 400) {
    for (const line of error.errors) {
      const name = fieldOf(line, names);
      const place = name && form.querySelector(`[data-field="${name}"] .field-error`);
      if (!place) general.push(line);
      else {
        place.textContent = place.textContent ? `${place.textContent} ${line}` : line;
        place.hidden = false;
      }
    }
    // Lines of no field here say more with the refusal's own words before them.
    if (general.length > 0) general.unshift(error.summary);
  } else general.push(error.message);
  if (general.length > 0) form.prepend(h('p', { class: 'error form-error', role: 'alert' }, general.join(' ')));
}

/** Runs `action` on the form's submission, its refusal shown in the form; `done` with what it answered. */
export function onSubmit(form, action, done) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const button = form.querySelector('button[type=submit]');
    if (button) button.disabled = true;
    try {
      const answer = await action();
      clearRefusal(form);
      await done?.(answer);
    } catch (error) {
      showRefusal(form, error);
    } finally {
      if (button) button.disabled = false;
    }
  });
  return form;
}
