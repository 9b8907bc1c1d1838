import type { Budgets } from '@perfwatch/common';
import type { ProjectRecord } from '../projects/store/projects-store.ts';
import type { SiteRecord, SitesStore } from './store/sites-store.ts';

/**
 * The budgets a site's page is held to (issue 34, item 3): key by key, the most specific limit
 * wins, the project's own over its group's over the site's. A key a project leaves unset is
 * inherited, so a site-wide LCP ceiling reaches every page that sets none of its own.
 */
export function effectiveBudgets(site: Budgets, group: Budgets | undefined, own: Budgets): Budgets {
  return {
    budgets: { ...site.budgets, ...group?.budgets, ...own.budgets },
    maxRegression: { ...site.maxRegression, ...group?.maxRegression, ...own.maxRegression },
  };
}

/** What a project is checked against: its own budgets, or for a page of a site, with those it inherits. */
export type BudgetsFor = (project: ProjectRecord) => Promise<Budgets>;

/**
 * Resolves a project's budgets when its snapshot is checked, not when it is made: a change of the
 * site's or a group's budgets reaches every page at its next snapshot. A project of no site (or of
 * a site since removed) has its own alone; a page no longer found keeps the site's.
 */
export function siteBudgetsResolver(store: Pick<SitesStore, 'findSite' | 'listSitePages'>): BudgetsFor {
  return async (project) => {
    if (!project.siteId) return project.budgets;
    const site = await store.findSite(project.userId, project.siteId);
    if (!site) return project.budgets;
    // The page's group is the one its site's discoveries put it in; read only when a group has budgets.
    const group = Object.keys(site.groupBudgets).length > 0 ? await groupOf(store, site, project.url) : undefined;
    const groupBudgets =
      group !== undefined && Object.hasOwn(site.groupBudgets, group) ? site.groupBudgets[group] : undefined;
    return effectiveBudgets(site.budgets, groupBudgets, project.budgets);
  };
}

async function groupOf(store: Pick<SitesStore, 'listSitePages'>, site: SiteRecord, url: string) {
  const pages = await store.listSitePages(site.id);
  return pages.find((page) => page.url === url && page.goneAt === null)?.group;
}
