import { z } from 'zod';
import { budgetKeyList, limitsSchema, type Budgets } from '../budgets.ts';
import { pageAuthSchema, type PageAuth } from '../page-auth.ts';
import { DEVICES, LOCATIONS, type Device, type Location } from '../ids.ts';
import { projectViewSchema } from '../overview.ts';
import { oneOf, projectUrl } from './request-fields.ts';

// ---- /v1/projects -----------------------------------------------------------------------

/** A project's settings as a client gives them; their rules are the gateway's, which the admin CLI shares. */
export interface ProjectSettingsGiven {
  locations?: Location[] | undefined;
  defaultLocation?: Location | undefined;
  runs?: number | undefined;
  schedule?: string | null | undefined;
  devices?: Device[] | undefined;
  crux?: boolean | undefined;
}

/** What a request of /v1/projects asks: the list (GET, an empty POST), a new project, a change, a removal. */
export type ProjectsParams =
  | { action: 'list' }
  | { action: 'create'; url: string; settings: ProjectSettingsGiven }
  | { action: 'change'; url: string; changes: ProjectSettingsGiven }
  | { action: 'remove'; url: string };

export const settingFields = {
  locations: z
    .array(oneOf('locations', LOCATIONS), { error: 'locations must be an array of locations' })
    .max(LOCATIONS.length * 2, 'locations has too many values')
    .optional()
    .meta({ description: `Locations of its updates (${LOCATIONS.join(', ')}); absent: the default location alone.` }),
  defaultLocation: oneOf('defaultLocation', LOCATIONS)
    .optional()
    .meta({ description: 'One of the locations, used when an update names none; absent: the first.' }),
  runs: z
    .number({ error: 'runs must be a number' })
    .optional()
    .meta({ description: 'Lighthouse runs per device and location, a whole number from 1 to 9 (default 3).' }),
  schedule: z
    .string({ error: 'schedule must be a cron expression or null' })
    .max(200, 'schedule is longer than 200 characters')
    .nullable()
    .optional()
    .meta({
      description:
        'Cron expression (UTC) of scheduled updates, as `perfwatch admin add-project --schedule`; null: none.',
    }),
  devices: z
    .array(oneOf('devices', DEVICES), { error: 'devices must be an array of devices' })
    .min(1, 'devices names at least one device')
    .max(DEVICES.length * 2, 'devices has too many values')
    .optional()
    .meta({
      description: `Devices an update measures when it names none, scheduled ones too (${DEVICES.join(', ')}); never set: both.`,
    }),
  crux: z.boolean({ error: 'crux must be true or false' }).optional().meta({
    description:
      "Whether updates fetch the page's CrUX field data (when the gateway has a CRUX_API_KEY); never set: they do.",
  }),
};
const SETTING_NAMES = ['locations', 'defaultLocation', 'runs', 'schedule', 'devices', 'crux'] as const;
const settingsOf = (value: ProjectSettingsGiven): ProjectSettingsGiven =>
  Object.fromEntries(SETTING_NAMES.filter((name) => value[name] !== undefined).map((name) => [name, value[name]]));

/** No parameters: the caller's projects. */
export const projectsQuerySchema = z.strictObject({}).transform((): ProjectsParams => ({ action: 'list' }));
/** POST: no `url`, the caller's projects (as GET); a `url`, a new project with its settings. */
export const projectsBodySchema = z
  .strictObject({
    url: projectUrl
      .optional()
      .meta({ description: 'Given: a project is created at this URL (409 if the caller has it).' }),
    ...settingFields,
  })
  .superRefine((value, ctx) => {
    if (value.url === undefined && Object.keys(settingsOf(value)).length > 0)
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'url is required to create a project' });
  })
  .transform((value): ProjectsParams =>
    value.url === undefined ? { action: 'list' } : { action: 'create', url: value.url, settings: settingsOf(value) },
  );
/** PATCH: a project's settings to change, named by its URL (budgets change by /v1/budgets). */
export const projectPatchSchema = z
  .strictObject({ url: projectUrl, ...settingFields })
  .superRefine((value, ctx) => {
    if (Object.keys(settingsOf(value)).length === 0)
      ctx.addIssue({ code: 'custom', message: `give at least one of ${SETTING_NAMES.join(', ')} to change` });
  })
  .transform((value): ProjectsParams => ({ action: 'change', url: value.url, changes: settingsOf(value) }));
/** DELETE: the project to remove, with its snapshots and everything else it has. */
export const projectDeleteSchema = z
  .strictObject({ url: projectUrl })
  .transform(({ url }): ProjectsParams => ({ action: 'remove', url }));

/** POST (a new project) and PATCH: the project as it is now. */
export const projectChangedSchema = z
  .object({ project: projectViewSchema, created: z.boolean() })
  .meta({ id: 'ProjectChanged' });
/** DELETE: that it was removed. */
export const projectRemovedSchema = z
  .object({ url: z.string(), removed: z.literal(true) })
  .meta({ id: 'ProjectRemoved' });

// ---- /v1/budgets ------------------------------------------------------------------------

export interface BudgetsParams {
  url: string;
  /** Present: the project's budgets are replaced by these. */
  set?: Budgets;
}

const replaced = ({
  url,
  budgets,
  maxRegression,
}: {
  url: string;
  budgets?: Budgets['budgets'] | undefined;
  maxRegression?: Budgets['maxRegression'] | undefined;
}): BudgetsParams =>
  budgets === undefined && maxRegression === undefined
    ? { url }
    : { url, set: { budgets: budgets ?? {}, maxRegression: maxRegression ?? {} } };

/** GET reads a project's budgets; they change by POST only. */
export const budgetsQuerySchema = z.strictObject({ url: projectUrl }).transform(({ url }): BudgetsParams => ({ url }));
/** Parameters that change budgets: refused in a GET (parseRequest's `writes`). */
export const BUDGETS_WRITES = ['budget', 'budgets', 'maxRegression'] as const;
export const budgetsBodySchema = z
  .strictObject({
    url: projectUrl,
    budgets: limitsSchema('budgets')
      .optional()
      .meta({
        description: `Limits by key (${budgetKeyList}): score floors 0–100, metric ceilings in ms, bytes, or unitless for cls. Given (or maxRegression given): the project's budgets are replaced.`,
      }),
    maxRegression: limitsSchema('maxRegression').optional().meta({
      description: 'Allowed regressions against the previous snapshot, by key: score points, or percent for metrics.',
    }),
  })
  .transform(replaced);

// ---- /v1/credentials ---------------------------------------------------------------------

export type CredentialsParams = { url: string; set?: PageAuth; clear: boolean };

/** GET reads; credentials change by POST only (and secrets never travel in a URL, where access logs and proxies keep them). */
export const credentialsQuerySchema = z
  .strictObject({ url: projectUrl })
  .transform(({ url }): CredentialsParams => ({ url, clear: false }));
export const CREDENTIALS_WRITES = ['auth', 'clear'] as const;
export const credentialsBodySchema = z
  .strictObject({
    url: projectUrl,
    auth: pageAuthSchema.optional().meta({
      description:
        'Replaces the credentials: cookies [{name, value}], headers {name: value}, login steps [{action: goto|fill|click|waitFor, …}]. POST only.',
    }),
    clear: z
      .boolean({ error: 'clear must be true or false' })
      .optional()
      .meta({ description: "true: forget the project's credentials." }),
  })
  .superRefine((value, ctx) => {
    if (value.auth && value.clear) ctx.addIssue({ code: 'custom', message: 'auth and clear do not go together' });
  })
  .transform(({ url, auth, clear }): CredentialsParams => ({
    url,
    clear: clear ?? false,
    ...(auth ? { set: auth } : {}),
  }));
