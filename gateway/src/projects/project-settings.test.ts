import { describe, expect, it } from 'vitest';
import {
  changedSettings,
  measuredDevices,
  projectSettings,
  ProjectSettingsError,
  wantsFieldData,
} from './project-settings.ts';
import type { ProjectRecord } from './store/projects-store.ts';

const refusal = (check: () => unknown) => {
  try {
    check();
  } catch (error) {
    if (error instanceof ProjectSettingsError) return `${error.field}: ${error.message}`;
    throw error;
  }
  throw new Error('not refused');
};

describe('projectSettings', () => {
  it('completes a new project with the admin CLI’s defaults', () => {
    expect(projectSettings('https://Shop.example', {})).toEqual({
      url: 'https://shop.example/',
      domain: 'shop.example',
      locations: ['s_carolina'],
      defaultLocation: 's_carolina',
      runs: 3,
      schedule: null,
      devices: null,
      crux: null,
    });
    expect(projectSettings('https://shop.example/', { locations: ['tokyo', 'london', 'tokyo'] })).toMatchObject({
      locations: ['tokyo', 'london'],
      defaultLocation: 'tokyo',
    });
    expect(projectSettings('https://shop.example/', { defaultLocation: 'london' }).locations).toEqual(['london']);
    expect(
      projectSettings('https://shop.example/', { devices: ['desktop', 'mobile', 'desktop'], crux: false }),
    ).toMatchObject({
      devices: ['mobile', 'desktop'],
      crux: false,
    });
  });

  it('measures both devices and asks for field data until a project says otherwise', () => {
    const never = projectSettings('https://shop.example/', {});
    expect(measuredDevices(never)).toEqual(['mobile', 'desktop']);
    expect(wantsFieldData(never)).toBe(true);
    const set = projectSettings('https://shop.example/', { devices: ['desktop'], crux: false });
    expect(measuredDevices(set)).toEqual(['desktop']);
    expect(wantsFieldData(set)).toBe(false);
    expect(wantsFieldData(projectSettings('https://shop.example/', { crux: true }))).toBe(true);
  });

  it('refuses each bad setting by its field', () => {
    const url = 'https://shop.example/';
    expect(refusal(() => projectSettings('ftp://shop.example/', {}))).toMatch(/^url: not an absolute http\(s\) URL/);
    expect(refusal(() => projectSettings('https://a:b@shop.example/', {}))).toMatch(/^url: .*must not carry/);
    expect(refusal(() => projectSettings(url, { locations: ['london'], defaultLocation: 'tokyo' }))).toMatch(
      /^defaultLocation: /,
    );
    expect(refusal(() => projectSettings(url, { schedule: 'soon' }))).toMatch(/^schedule: not a cron expression/);
    for (const runs of [0, 10, 1.5, Number.NaN])
      expect(refusal(() => projectSettings(url, { runs }))).toBe('runs: runs is a whole number from 1 to 9');
    expect(refusal(() => projectSettings(url, { devices: [] }))).toBe('devices: devices names at least one device');
    expect(refusal(() => projectSettings(url, { devices: ['tablet' as 'mobile'] }))).toMatch(
      /^devices: unknown device\(s\) tablet/,
    );
  });
});

describe('changedSettings', () => {
  const project: ProjectRecord = {
    id: 'p',
    userId: 'u',
    url: 'https://shop.example/',
    domain: 'shop.example',
    locations: ['london', 'tokyo'],
    defaultLocation: 'tokyo',
    runs: 2,
    schedule: '0 3 * * *',
    budgets: { budgets: {}, maxRegression: {} },
    auth: null,
    devices: null,
    crux: null,
    siteId: null,
    flow: null,
    createdAt: new Date(0),
  };

  it('keeps what is not changed; the default follows new locations', () => {
    expect(changedSettings(project, { runs: 5 })).toEqual({
      locations: ['london', 'tokyo'],
      defaultLocation: 'tokyo',
      runs: 5,
      schedule: '0 3 * * *',
      devices: null,
      crux: null,
    });
    const desktopOnly = changedSettings(project, { devices: ['desktop'], crux: false });
    expect(desktopOnly).toMatchObject({ devices: ['desktop'], crux: false, runs: 2 });
    expect(changedSettings({ ...project, ...desktopOnly }, { runs: 4 })).toMatchObject({
      devices: ['desktop'],
      crux: false,
    });
    expect(changedSettings(project, { locations: ['tokyo', 'frankfurt'] }).defaultLocation).toBe('tokyo');
    expect(changedSettings(project, { locations: ['frankfurt', 'london'] }).defaultLocation).toBe('frankfurt');
    expect(changedSettings(project, { schedule: null }).schedule).toBeNull();
  });

  it('checks the result by the same rules', () => {
    expect(refusal(() => changedSettings(project, { defaultLocation: 'sao_paulo' }))).toMatch(/^defaultLocation: /);
    expect(refusal(() => changedSettings(project, { runs: 12 }))).toMatch(/^runs: /);
  });
});
