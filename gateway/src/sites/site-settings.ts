import type { SitesParams, SiteSettingsGiven } from '@perfwatch/common';
import { changedSettings, checkedSettings, ProjectSettingsError } from '../projects/project-settings.ts';
import type { SiteBudgets, SiteRecord, SiteSettings } from './store/sites-store.ts';

/** A setting refused by the rules below; `field` names it as the API's request does. */
export class SiteSettingsError extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'SiteSettingsError';
    this.field = field;
  }
}

/** What a site has that it was not given. */
const SITE_DEFAULTS = {
  sitemap: 'discover',
  include: [],
  exclude: [],
  maxPages: 100,
  sampleSize: 3,
  groupPatterns: [],
};

/**
 * A new site's settings, checked and completed with their defaults. Where and how its pages are
 * measured follow a project's rules (project-settings.ts). The sitemap it names is on its own
 * origin; the site's robots.txt may still name sitemaps on another public host (a CDN), which
 * discovery reads through the target guard, counting only pages of the origin (docs/sites.md).
 */
export function siteSettings(origin: string, given: SiteSettingsGiven): SiteSettings {
  const measuring = projectRules(() => checkedSettings(given));
  return completed(origin, given, { ...SITE_DEFAULTS, ...measuring });
}

/** A site's settings after `changes` (PATCH /v1/sites), by the same rules; the default location follows the locations. */
export function changedSiteSettings(site: SiteRecord, changes: SiteSettingsGiven): SiteSettings {
  const measuring = projectRules(() => changedSettings({ ...site, crux: null }, changes));
  return completed(site.origin, changes, { ...site, ...measuring });
}

/** `current` with what `given` changes of the site's own settings, the sitemap checked. */
function completed(origin: string, given: SiteSettingsGiven, current: SiteSettings & { crux?: unknown }): SiteSettings {
  const sitemap = given.sitemap ?? current.sitemap;
  if (sitemap !== 'discover' && new URL(sitemap).origin !== origin)
    throw new SiteSettingsError('sitemap', `the sitemap ${sitemap} is not on the site's origin ${origin}`);
  return {
    sitemap,
    include: [...new Set(given.include ?? current.include)],
    exclude: [...new Set(given.exclude ?? current.exclude)],
    maxPages: given.maxPages ?? current.maxPages,
    sampleSize: given.sampleSize ?? current.sampleSize,
    groupPatterns: [...new Set(given.groupPatterns ?? current.groupPatterns)],
    devices: current.devices,
    locations: current.locations,
    defaultLocation: current.defaultLocation,
    runs: current.runs,
    schedule: current.schedule,
  };
}

type SiteBudgetsGiven = Extract<SitesParams, { action: 'change' }>['budgets'];

/**
 * A site's budgets after a PATCH: each of its own and its groups' given replaces the site's whole
 * (a group left out of `groupBudgets` has none then); null when the PATCH gives neither.
 */
export function changedSiteBudgets(site: SiteBudgets, given: SiteBudgetsGiven): SiteBudgets | null {
  if (given.budgets === undefined && given.groupBudgets === undefined) return null;
  return { budgets: given.budgets ?? site.budgets, groupBudgets: given.groupBudgets ?? site.groupBudgets };
}

/** A project rule's refusal as this module's, naming the same field. */
function projectRules<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof ProjectSettingsError) throw new SiteSettingsError(error.field, error.message);
    throw error;
  }
}
