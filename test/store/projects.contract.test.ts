import { expect, it } from 'vitest';
import { describeOnBothStores, storedResult } from './store-backends.ts';
import type { ProjectSettings } from '../../gateway/src/projects/store/projects-store.ts';

// A user's projects, their budgets and credentials (ProjectsStore).
// Run against both backends: FerretDB (MongoDB where containers run) and SQLite.
describeOnBothStores('projects', (store) => {
  it("replaces a project's credentials only while they are what the caller read", async () => {
    const user = await store().createUser('resealing');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://reseal.example/',
      domain: 'reseal.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    await store().setProjectAuth(project.id, 'pwsec1.old');
    expect(await store().replaceProjectAuth(project.id, 'pwsec1.old', 'pwsec1.resealed')).toBe(true);
    // Another write came between this caller's read and its write: that write stands.
    await store().setProjectAuth(project.id, 'pwsec1.set-meanwhile');
    expect(await store().replaceProjectAuth(project.id, 'pwsec1.resealed', 'pwsec1.stale')).toBe(false);
    expect((await store().findProject(user.id, project.url))!.auth).toBe('pwsec1.set-meanwhile');
    await store().setProjectAuth(project.id, null);
    expect(await store().replaceProjectAuth(project.id, 'pwsec1.set-meanwhile', 'pwsec1.stale')).toBe(false);
    expect((await store().findProject(user.id, project.url))!.auth).toBeNull();
  });

  it('scopes projects to their user', async () => {
    const bob = await store().createUser('bob');
    const carol = await store().createUser('carol');
    const project = await store().addProject({
      userId: bob.id,
      url: 'https://shop.example/',
      domain: 'shop.example',
      locations: ['london', 'tokyo'],
      defaultLocation: 'london',
      runs: 3,
      schedule: null,
    });
    await expect(store().addProject({ ...project, userId: bob.id })).rejects.toThrow(/exists/);
    expect((await store().findProject(bob.id, 'https://shop.example/'))!.id).toBe(project.id);
    expect(await store().findProject(carol.id, 'https://shop.example/')).toBeNull();
    // The same URL may be another user's project too.
    await store().addProject({ ...project, userId: carol.id });
    expect(await store().listProjects(carol.id)).toHaveLength(1);
  });

  it('keeps the site a project is a page of; a project made by hand has none (issue 34)', async () => {
    const dana = await store().createUser('dana');
    const given = { userId: dana.id, domain: 'shop.example', locations: ['london' as const] };
    const settings = { ...given, defaultLocation: 'london' as const, runs: 1, schedule: null };
    const siteId = '0123456789abcdef01234567';
    await store().addProject({ ...settings, url: 'https://shop.example/p/1', siteId });
    await store().addProject({ ...settings, url: 'https://shop.example/mine' });
    expect((await store().listProjects(dana.id)).map((p) => [p.url, p.siteId])).toEqual([
      ['https://shop.example/mine', null],
      ['https://shop.example/p/1', siteId],
    ]);
  });

  it("replaces a project's settings, keeping its budgets", async () => {
    const user = await store().createUser('settings-owner');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://settings.example/',
      domain: 'settings.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    const budgets = { budgets: { performance: 90 }, maxRegression: {} };
    await store().setProjectBudgets(project.id, budgets);
    const settings: ProjectSettings = {
      locations: ['tokyo', 'london'],
      defaultLocation: 'tokyo',
      runs: 5,
      schedule: '0 * * * *',
      devices: null,
      crux: null,
    };
    await store().setProjectSettings(project.id, settings);
    expect(await store().findProject(user.id, project.url)).toMatchObject({ ...settings, budgets, url: project.url });
  });

  it("keeps a project's budgets, and the checks stored with each result of a snapshot", async () => {
    const user = await store().createUser('budget-owner');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://budgets.example/',
      domain: 'budgets.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    expect(project.budgets).toEqual({ budgets: {}, maxRegression: {} });
    const budgets = { budgets: { performance: 90, lcp: 2500 }, maxRegression: { 'best-practices': 5 } };
    await store().setProjectBudgets(project.id, budgets);
    const found = (await store().findProject(user.id, project.url))!;
    expect(found.budgets).toEqual(budgets);
    const checks = [
      {
        key: 'performance' as const,
        kind: 'budget' as const,
        actual: 72,
        limit: 90,
        pass: false,
        message: 'performance score 72, budget at least 90',
        state: 'failing' as const,
        confirmation: { actual: 70, pass: false },
        event: 'budget.failed' as const,
      },
    ];
    const date = new Date('2026-06-01T10:00:00Z');
    await store().saveSnapshot({
      project: found,
      updateId: 'budget-checks-1',
      date,
      updateType: 'scheduled',
      results: [{ ...storedResult('desktop', 'london'), checks }, storedResult('mobile', 'london')],
    });
    const snapshot = (await store().findSnapshot(project.id, date))!;
    expect(snapshot.results.find((r) => r.device === 'desktop')!.checks).toEqual(checks);
    expect(snapshot.results.find((r) => r.device === 'mobile')!.checks).toBeUndefined();
  });
});

describeOnBothStores('projects: devices and CrUX opt-in', (store) => {
  it('keeps both unset (null) until set, then keeps them through other changes', async () => {
    const user = await store().createUser('devices-owner');
    const project = await store().addProject({
      userId: user.id,
      url: 'https://devices.example/',
      domain: 'devices.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
    expect(project).toMatchObject({ devices: null, crux: null });
    expect(await store().findProject(user.id, project.url)).toMatchObject({ devices: null, crux: null });
    const settings: ProjectSettings = {
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: '0 4 * * *',
      devices: ['desktop'],
      crux: false,
    };
    await store().setProjectSettings(project.id, settings);
    expect(await store().findProject(user.id, project.url)).toMatchObject({ devices: ['desktop'], crux: false });
    // The scheduler reads the same records: its update measures what the project says.
    const scheduled = (await store().listScheduledProjects()).find((p) => p.id === project.id);
    expect(scheduled).toMatchObject({ devices: ['desktop'], crux: false });
    await store().setProjectSettings(project.id, { ...settings, runs: 2, crux: true });
    expect((await store().listProjects(user.id))[0]).toMatchObject({ runs: 2, devices: ['desktop'], crux: true });
    const made = await store().addProject({
      ...project,
      url: 'https://made.example/',
      devices: ['mobile'],
      crux: false,
    });
    expect(await store().findProject(user.id, made.url)).toMatchObject({ devices: ['mobile'], crux: false });
  });
});
