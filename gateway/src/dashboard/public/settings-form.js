import { h } from './dom.js';
import { checkboxes, field, ticked } from './form-fields.js';

// A project's settings as a form, for "Add project" (POST /v1/projects) and its settings page
// (PATCH): locations, devices, runs, schedule and CrUX. The rules are the API's, which names the
// field it refuses; the form only offers what can be chosen.

/** As common/src/ids.ts has them; an agent location the API does not know it refuses by name. */
const LOCATIONS = ['s_carolina', 'los_angeles', 'frankfurt', 'london', 'tokyo', 'sao_paulo'];
export const DEVICES = ['mobile', 'desktop'];

/**
 * The settings' fields, filled with `project`'s (absent: a new project's defaults, which are the
 * API's: the first location, both devices, 3 runs, no schedule, CrUX on).
 */
export function settingsFields(idPrefix, project) {
  const id = (name) => `${idPrefix}-${name}`;
  const defaultLocation = h(
    'select',
    { id: id('defaultLocation'), name: 'defaultLocation' },
    h('option', { value: '' }, 'the first location'),
    LOCATIONS.map((l) => h('option', { value: l, selected: project?.defaultLocation === l }, l)),
  );
  const locations = checkboxes('locations', idPrefix, LOCATIONS, project?.locations ?? []);
  const devices = checkboxes('devices', idPrefix, DEVICES, project?.devices ?? DEVICES);
  return [
    field('locations', 'Locations', locations, 'Where its updates run; none ticked: the default location alone.'),
    field('defaultLocation', 'Default location', defaultLocation, 'Used when an update names none.'),
    field('devices', 'Devices', devices, 'Measured by an update that names no device, a scheduled one too.'),
    field(
      'runs',
      'Runs',
      h('input', { id: id('runs'), name: 'runs', type: 'number', value: project?.runs ?? 3, inputmode: 'numeric' }),
      'Lighthouse runs per device and location (1 to 9); the median run is kept.',
    ),
    field(
      'schedule',
      'Schedule',
      h('input', {
        id: id('schedule'),
        name: 'schedule',
        value: project?.schedule ?? '',
        placeholder: '0 3 * * *',
        spellcheck: 'false',
      }),
      'A cron expression (UTC) of scheduled updates; empty: none.',
    ),
    field(
      'crux',
      'Field data',
      h('input', { id: id('crux'), name: 'crux', type: 'checkbox', checked: project?.crux !== false }),
      "Fetch the page's CrUX field data with each update (when the gateway has a CrUX key).",
    ),
  ];
}

/** The settings the form holds, as POST and PATCH /v1/projects take them. */
export function settingsOf(form) {
  const value = (name) => form.elements.namedItem(name).value.trim();
  const locations = ticked(form, 'locations');
  const runs = value('runs');
  return {
    ...(locations.length > 0 ? { locations } : {}),
    ...(value('defaultLocation') ? { defaultLocation: value('defaultLocation') } : {}),
    devices: ticked(form, 'devices'),
    // Sent as typed: the API says what is wrong with "three" or 12, by the field's name.
    ...(runs === '' ? {} : { runs: Number.isNaN(Number(runs)) ? runs : Number(runs) }),
    schedule: value('schedule') || null,
    crux: form.elements.namedItem('crux').checked,
  };
}
