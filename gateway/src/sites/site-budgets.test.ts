import { describe, expect, it } from 'vitest';
import type { Budgets } from '@perfwatch/common';
import type { ProjectRecord } from '../projects/store/projects-store.ts';
import { effectiveBudgets, siteBudgetsResolver } from './site-budgets.ts';
import type { SitePageRecord, SiteRecord } from './store/sites-store.ts';

const none: Budgets = { budgets: {}, maxRegression: {} };

describe('effectiveBudgets', () => {
  it('holds a page to the most specific limit of each key: its own, then its group’s, then the site’s', () => {
    const site: Budgets = { budgets: { lcp: 4000, performance: 50, cls: 0.25 }, maxRegression: { lcp: 20 } };
    const group: Budgets = { budgets: { lcp: 2500, tbt: 300 }, maxRegression: {} };
    const own: Budgets = { budgets: { performance: 90 }, maxRegression: { lcp: 5 } };
    expect(effectiveBudgets(site, group, own)).toEqual({
      budgets: { lcp: 2500, performance: 90, cls: 0.25, tbt: 300 },
      maxRegression: { lcp: 5 },
    });
  });

  it('inherits the site’s alone for a page of a group without budgets, and changes none of its inputs', () => {
    const site: Budgets = { budgets: { lcp: 4000 }, maxRegression: { performance: 5 } };
    expect(effectiveBudgets(site, undefined, none)).toEqual(site);
    expect(effectiveBudgets(none, undefined, none)).toEqual(none);
    expect(site).toEqual({ budgets: { lcp: 4000 }, maxRegression: { performance: 5 } });
  });

  it('keeps a project’s own limit of 0 over an inherited one (0 is a limit, not its absence)', () => {
    const own: Budgets = { budgets: { cls: 0 }, maxRegression: {} };
    expect(effectiveBudgets({ budgets: { cls: 0.1 }, maxRegression: {} }, undefined, own).budgets).toEqual({ cls: 0 });
  });
});

describe('siteBudgetsResolver', () => {
  const site = {
    id: 's1',
    userId: 'org',
    budgets: { budgets: { lcp: 4000 }, maxRegression: {} },
    groupBudgets: { '/product/:id': { budgets: { lcp: 2500 }, maxRegression: {} } },
  } as unknown as SiteRecord;
  const page = (url: string, group: string, goneAt: Date | null = null) =>
    ({ siteId: 's1', url, group, sampled: true, goneAt }) as SitePageRecord;
  const store = {
    findSite: async (userId: string, id: string) => (userId === 'org' && id === 's1' ? site : null),
    listSitePages: async () => [
      page('https://shop.example/product/1', '/product/:id'),
      page('https://shop.example/product/2', '/product/:id', new Date()),
      page('https://shop.example/about', '/about'),
    ],
  };
  const project = (url: string, siteId: string | null, own: Budgets = none) =>
    ({ userId: 'org', url, siteId, budgets: own }) as ProjectRecord;
  const budgetsFor = siteBudgetsResolver(store);

  it('reads the group a page is in now and the site’s budgets as they are now', async () => {
    expect((await budgetsFor(project('https://shop.example/product/1', 's1'))).budgets).toEqual({ lcp: 2500 });
    expect((await budgetsFor(project('https://shop.example/about', 's1'))).budgets).toEqual({ lcp: 4000 });
    // A page no longer found is in no group: the site's budgets still hold.
    expect((await budgetsFor(project('https://shop.example/product/2', 's1'))).budgets).toEqual({ lcp: 4000 });
  });

  it('gives a project of no site, or of a site since removed, its own budgets alone', async () => {
    const own: Budgets = { budgets: { performance: 80 }, maxRegression: {} };
    expect(await budgetsFor(project('https://elsewhere.example/', null, own))).toEqual(own);
    expect(await budgetsFor(project('https://shop.example/product/1', 'gone', own))).toEqual(own);
  });
});
