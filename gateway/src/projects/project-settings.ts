import { CronExpressionParser } from 'cron-parser';
import { DEVICES, LOCATIONS, normalizeProjectUrl, type Device, type Location } from '@perfwatch/common';
import type { ProjectRecord, ProjectSettings } from './store/projects-store.ts';

/** A project's settings as given, by the admin CLI or the API; absent ones take their defaults. */
export interface ProjectOptions {
  locations?: Location[] | undefined;
  defaultLocation?: Location | undefined;
  runs?: number | undefined;
  schedule?: string | null | undefined;
  devices?: readonly Device[] | undefined;
  crux?: boolean | undefined;
}

/** A setting refused by the rules below; `field` names it as the API's request does. */
export class ProjectSettingsError extends Error {
  readonly field: 'url' | 'defaultLocation' | 'schedule' | 'runs' | 'devices';

  constructor(field: ProjectSettingsError['field'], message: string) {
    super(message);
    this.name = 'ProjectSettingsError';
    this.field = field;
  }
}

/**
 * A new project's URL and settings, checked and completed with their defaults: the one set of
 * rules `perfwatch admin add-project` and `POST /v1/projects` share.
 */
export function projectSettings(url: string, options: ProjectOptions) {
  const normalized = normalizeProjectUrl(url);
  if (!normalized) throw new ProjectSettingsError('url', `not an absolute http(s) URL: ${url}`);
  // Stored, listed and logged with the project: a password there would leak everywhere.
  const parsed = new URL(normalized);
  if (parsed.username || parsed.password)
    throw new ProjectSettingsError(
      'url',
      `a project URL must not carry credentials (user:password@): ${parsed.protocol}//${parsed.host}${parsed.pathname}`,
    );
  return { url: normalized, domain: parsed.hostname, ...checkedSettings(options) };
}

/**
 * A project's settings after `changes` (`PATCH /v1/projects`), checked by the same rules. New
 * locations without a default keep the old default when it is among them, else take their first.
 */
export function changedSettings(project: ProjectSettings, changes: ProjectOptions): ProjectSettings {
  const locations = changes.locations ?? project.locations;
  const defaultLocation =
    changes.defaultLocation ?? (locations.includes(project.defaultLocation) ? project.defaultLocation : locations[0]);
  return checkedSettings({
    locations,
    defaultLocation,
    runs: changes.runs ?? project.runs,
    schedule: changes.schedule === undefined ? project.schedule : changes.schedule,
    devices: changes.devices ?? project.devices ?? undefined,
    crux: changes.crux ?? project.crux ?? undefined,
  });
}

/** The devices an update that names none measures (a scheduled one too): the project's, else both. */
export const measuredDevices = (project: Pick<ProjectRecord, 'devices'>): readonly Device[] =>
  project.devices ?? DEVICES;

/** Whether an update of the project asks CrUX for field data (when the gateway has a key): unless it opted out. */
export const wantsFieldData = (project: Pick<ProjectRecord, 'crux'>): boolean => project.crux !== false;

/** `options` checked by the rules every project's settings follow, completed with their defaults (a site's too). */
export function checkedSettings(options: ProjectOptions): ProjectSettings {
  const locations =
    options.locations && options.locations.length > 0
      ? [...new Set(options.locations)]
      : [options.defaultLocation ?? LOCATIONS[0]];
  const defaultLocation = options.defaultLocation ?? locations[0]!;
  if (!locations.includes(defaultLocation))
    throw new ProjectSettingsError(
      'defaultLocation',
      `the default location ${defaultLocation} is not among the project's locations`,
    );
  if (options.schedule) {
    try {
      CronExpressionParser.parse(options.schedule, { tz: 'UTC' });
    } catch (error) {
      throw new ProjectSettingsError(
        'schedule',
        `not a cron expression: ${options.schedule} (${(error as Error).message})`,
      );
    }
  }
  const runs = options.runs ?? 3;
  if (!Number.isInteger(runs) || runs < 1 || runs > 9)
    throw new ProjectSettingsError('runs', 'runs is a whole number from 1 to 9');
  return {
    locations,
    defaultLocation,
    runs,
    schedule: options.schedule ?? null,
    devices: checkedDevices(options.devices),
    crux: options.crux ?? null,
  };
}

/** Given devices in DEVICES' order, once each (none given: null, never set). */
function checkedDevices(devices: readonly Device[] | undefined): Device[] | null {
  if (devices === undefined) return null;
  const unknown = devices.filter((device) => !DEVICES.includes(device));
  if (unknown.length > 0)
    throw new ProjectSettingsError('devices', `unknown device(s) ${unknown.join(', ')}: give ${DEVICES.join(', ')}`);
  if (devices.length === 0) throw new ProjectSettingsError('devices', 'devices names at least one device');
  return DEVICES.filter((device) => devices.includes(device));
}
