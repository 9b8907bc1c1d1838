import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { LOCATIONS } from '@perfwatch/common';
import { launchBrowser, watchedPage } from '../support/browser.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Projects made, changed and removed from the dashboard (issue 33, item 1) in a real Chromium
// against a real gateway, nats-server and MongoDB-wire server: "Add project" (a refusal shown by
// its field), the project's settings page (runs and schedule changed, seen by GET /v1/projects),
// and its removal once its URL is typed. Nothing is measured: no agent, no Lighthouse.

const MADE = 'https://made.example/';

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let token: string;
let client: ApiClient;
let browser: Browser;
let page: Page;
const problems: string[] = [];

/** The project as GET /v1/projects lists it now; undefined once removed. */
const listed = async (url: string) => (await client.projects()).find((p) => p.url === url);
/** What the browser logged of the API's refusals the test asked for (a 400, a 403), taken out of `problems`. */
const refusalsLogged = () =>
  problems
    .splice(0)
    .filter((line) => !/Failed to load resource: the server responded with a status of 40[034]/.test(line));

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    // Webhooks to this machine, and sealed credentials and forge tokens.
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      PERFWATCH_TRUSTED_LOCATIONS: ['london'],
    },
  });
  ({ token } = await gateway.admin.createUser('erin'));
  client = createApiClient({ server: gateway.url, token });
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
  await page.goto(`${gateway.url}/`);
  await page.fill('#token', token);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#add-project-link');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await nats?.dispose();
});

describe('projects from the dashboard', () => {
  it('adds a project, showing the API’s refusal beside the field it names', async () => {
    await page.click('#add-project-link');
    await page.waitForSelector('#add-project');
    // The form offers the locations the API knows, and no other.
    expect(await page.$$eval('#new-locations input', (inputs) => inputs.map((i) => i.getAttribute('value')))).toEqual([
      ...LOCATIONS,
    ]);
    await page.fill('#new-url', MADE);
    await page.check('#new-locations input[value=london]');
    await page.uncheck('#new-devices input[value=desktop]');
    await page.fill('#new-runs', '12');
    await page.fill('#new-schedule', '0 6 * * 1');
    await page.click('#add-project button[type=submit]');
    const runsError = page.locator('[data-field=runs] .field-error');
    await expect.poll(() => runsError.textContent()).toBe('runs: runs is a whole number from 1 to 9');
    expect(await page.isVisible('[data-field=schedule] .field-error')).toBe(false);
    expect(await listed(MADE)).toBeUndefined();

    await page.fill('#new-runs', '2');
    await page.click('#add-project button[type=submit]');
    await page.waitForSelector('#project-settings');
    expect(await page.textContent('.notice')).toBe('Project added.');
    expect(await listed(MADE)).toEqual({
      url: MADE,
      domain: 'made.example',
      locations: ['london'],
      defaultLocation: 'london',
      runs: 2,
      schedule: '0 6 * * 1',
      devices: ['mobile'],
    });
    expect(refusalsLogged()).toEqual([]);
  });

  it('changes its runs and schedule on its settings page, as GET /v1/projects then lists them', async () => {
    await page.goto(`${gateway.url}/#/`);
    await page.waitForSelector('.project-link');
    expect(await page.textContent('.projects li .meta')).toBe(
      'london · 2 runs per update · schedule 0 6 * * 1 (UTC) · mobile only',
    );
    await page.click(`.project-link[href*="${encodeURIComponent(MADE)}"]`);
    await page.click('#settings-link');
    await page.waitForSelector('#project-settings');
    // The form shows the project as it is.
    expect(await page.inputValue('#edit-runs')).toBe('2');
    expect(await page.isChecked('#edit-devices input[value=desktop]')).toBe(false);
    await page.fill('#edit-runs', '4');
    await page.fill('#edit-schedule', '30 2 * * *');
    await page.click('#project-settings button[type=submit]');
    await expect.poll(() => page.textContent('#settings-saved')).toBe('Saved.');
    expect(await listed(MADE)).toMatchObject({ runs: 4, schedule: '30 2 * * *', locations: ['london'] });

    await page.fill('#edit-schedule', 'every night');
    await page.click('#project-settings button[type=submit]');
    await expect
      .poll(() => page.textContent('#project-settings [data-field=schedule] .field-error'))
      .toMatch(/^schedule: not a cron expression: every night/);
    expect((await listed(MADE))?.schedule).toBe('30 2 * * *');
    expect(refusalsLogged()).toEqual([]);
  });

  it('replaces its budgets on the settings page', async () => {
    await page.fill('#budgets-budgets', 'performance=90\nlcp = 2500');
    await page.fill('#budgets-maxRegression', 'performance=5');
    await page.click('#budgets-form button[type=submit]');
    await expect.poll(() => page.textContent('#budgets .budgets')).toMatch(/performance ≥ 90 · LCP ≤ 2500 ms/);
    expect(await client.budgets(MADE)).toMatchObject({
      budgets: { performance: 90, lcp: 2500 },
      maxRegression: { performance: 5 },
    });
    // The other parts of the page read their endpoints: nothing set yet.
    expect(await page.textContent('#credentials-state')).toMatch(/^No credentials/);
    expect(await page.textContent('#repository-state')).toBe('Linked to no repository.');
    expect(await page.textContent('#webhooks .empty')).toMatch(/^No webhook/);
    expect(refusalsLogged()).toEqual([]);
  });

  it('sets and clears its credentials, adds and removes a webhook, links and unlinks its repository', async () => {
    // This gateway trusts london's agents only with credentials: measured in tokyo too, the
    // project cannot have any, and the refusal says so above the form.
    await client.updateProject(MADE, { locations: ['london', 'tokyo'] });
    await page.fill('#credentials-auth', '{"cookies": [{"name": "session", "value": "s3cret"}]}');
    await page.click('#credentials-form button[type=submit]');
    await expect
      .poll(() => page.textContent('#credentials-form .form-error'))
      .toMatch(/^Credentials cannot be kept for this project: they would go to tokyo/);
    await client.updateProject(MADE, { locations: ['london'] });
    await page.fill('#credentials-auth', '{"cookies": [{"name": "session", "value": "s3cret"}]}');
    await page.fill('#credentials-auth', '{"cookies": [{"name": "session", "value": "s3cret"}]}');
    await page.click('#credentials-form button[type=submit]');
    await expect.poll(() => page.textContent('#credentials-state')).toBe('Credentials set: cookies session.');
    expect(await page.content()).not.toContain('s3cret');
    await page.click('#credentials-clear button[type=submit]');
    await expect.poll(() => page.textContent('#credentials-state')).toMatch(/^No credentials/);

    await page.fill('#webhook-target', 'http://127.0.0.1:9/hooks');
    await page.selectOption('#webhook-format', 'slack');
    await page.click('#webhook-add button[type=submit]');
    await page.waitForSelector('#webhook-secret code');
    const { webhooks } = await client.webhooks();
    expect(webhooks).toMatchObject([{ targetUrl: 'http://127.0.0.1:9/hooks', project: MADE, format: 'slack' }]);
    await page.click(`tr[data-webhook="${webhooks[0]!.id}"] button`);
    await page.waitForSelector('#webhooks .empty');
    expect((await client.webhooks()).webhooks).toEqual([]);

    await page.selectOption('#repository-forge', 'github');
    await page.fill('#repository-repository', 'not a repository');
    await page.fill('#repository-token', 'ghp_secret');
    await page.fill('#repository-webhookSecret', 'w'.repeat(32));
    await page.click('#repository-form button[type=submit]');
    await expect
      .poll(() => page.textContent('[data-field=repository] .field-error'))
      .toBe('repository must be owner/name');
    await page.fill('#repository-repository', 'shop/web');
    await page.fill('#repository-token', 'ghp_secret');
    await page.fill('#repository-webhookSecret', 'w'.repeat(32));
    await page.click('#repository-form button[type=submit]');
    await expect
      .poll(() => page.textContent('#repository-state'))
      .toBe('Linked to github shop/web (previews compared with main).');
    expect(await page.content()).not.toContain('ghp_secret');
    await page.click('#repository-unlink button[type=submit]');
    await expect.poll(() => page.textContent('#repository-state')).toBe('Linked to no repository.');
    refusalsLogged();
  });

  it('makes a read token on the Tokens page, shown once, whose viewer is told their role cannot change a setting', async () => {
    await page.goto(`${gateway.url}/#/tokens`);
    await page.waitForSelector('#token-create');
    await page.selectOption('#token-scope', 'read');
    await page.fill('#token-label', 'for a viewer');
    await page.click('#token-create button[type=submit]');
    const secret = (await page.locator('#new-token code').textContent())!;
    expect(secret).toMatch(/^pw_/);
    const row = page.locator('tr', { hasText: 'for a viewer' });
    expect(await row.locator('td').nth(2).textContent()).toBe('read');

    const viewer = await watchedPage(browser, problems);
    try {
      await viewer.goto(`${gateway.url}/`);
      await viewer.fill('#token', secret);
      await viewer.click('#sign-in button[type=submit]');
      await viewer.waitForSelector('.project-link');
      await viewer.goto(`${gateway.url}/#/project/settings?url=${encodeURIComponent(MADE)}`);
      await viewer.waitForSelector('#project-settings');
      await viewer.fill('#edit-runs', '1');
      await viewer.click('#project-settings button[type=submit]');
      await expect
        .poll(() => viewer.textContent('#project-settings .form-error'))
        .toBe('Your role (viewer) cannot change this.');
      expect((await listed(MADE))?.runs).toBe(4);
      // The tokens of the organisation are its admins' to see.
      await viewer.goto(`${gateway.url}/#/tokens`);
      await expect.poll(() => viewer.textContent('#view .error')).toBe('Your role (viewer) cannot see this.');
    } finally {
      await viewer.close();
    }
    refusalsLogged();
  });

  it('lists the changes in the audit log, with who made them', async () => {
    await page.goto(`${gateway.url}/#/audit-log`);
    await page.waitForSelector('table.audit-log');
    const actions = await page.$$eval('table.audit-log tbody tr', (rows) =>
      rows.map((r) => r.getAttribute('data-action')),
    );
    expect(actions).toEqual(
      expect.arrayContaining(['project.created', 'project.changed', 'budgets.replaced', 'token.created']),
    );
    expect(await page.textContent('table.audit-log tbody tr:last-child td:nth-child(2)')).toMatch(/^erin · token pw_/);
    expect(refusalsLogged()).toEqual([]);
  });

  it('removes it only once its URL is typed', async () => {
    await page.goto(`${gateway.url}/#/project/settings?url=${encodeURIComponent(MADE)}`);
    await page.waitForSelector('#remove-project');
    const remove = page.locator('#remove-project button[type=submit]');
    expect(await remove.isDisabled()).toBe(true);
    await page.fill('#remove-confirm', 'https://made.example');
    expect(await remove.isDisabled()).toBe(true);
    await page.fill('#remove-confirm', MADE);
    expect(await remove.isDisabled()).toBe(false);
    await remove.click();
    await page.waitForSelector('#add-project-link');
    expect(await listed(MADE)).toBeUndefined();
    expect(await page.$$eval('.project-link', (links) => links.length)).toBe(0);
    expect(refusalsLogged()).toEqual([]);
  });
});
