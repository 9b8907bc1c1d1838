import { describe, expect, it } from 'vitest';
import { changedSettings, projectSettings, ProjectSettingsError } from './project-settings.ts';
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
    });
    expect(projectSettings('https://shop.example/', { locations: ['tokyo', 'london', 'tokyo'] })).toMatchObject({
      locations: ['tokyo', 'london'],
      defaultLocation: 'tokyo',
    });
    expect(projectSettings('https://shop.example/', { defaultLocation: 'london' }).locations).toEqual(['london']);
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
    createdAt: new Date(0),
  };

  it('keeps what is not changed; the default follows new locations', () => {
    expect(changedSettings(project, { runs: 5 })).toEqual({
      locations: ['london', 'tokyo'],
      defaultLocation: 'tokyo',
      runs: 5,
      schedule: '0 3 * * *',
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
