import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.ts';
import { ciChangeOf } from './ci-environment.ts';

const HEAD = 'a'.repeat(40);
const MERGE = 'b'.repeat(40);
const noFile = () => {
  throw new Error('no event file in this test');
};

describe('the change a CI job measures, from its own variables', () => {
  it('GitHub Actions on a pull request: the head commit from the event, not the merge commit', () => {
    const event = JSON.stringify({ pull_request: { number: 42, head: { sha: HEAD, ref: 'faster-images' } } });
    const change = ciChangeOf(
      'github',
      {
        GITHUB_TOKEN: 'ghs_x',
        GITHUB_REPOSITORY: 'shop/web',
        GITHUB_SHA: MERGE,
        GITHUB_REF: 'refs/pull/42/merge',
        GITHUB_EVENT_PATH: '/tmp/event.json',
      },
      () => event,
    );
    expect(change).toEqual({
      target: { forge: 'github', apiUrl: 'https://api.github.com', repository: 'shop/web', token: 'ghs_x' },
      commit: HEAD,
      branch: 'faster-images',
      pullRequest: 42,
    });
  });

  it('GitHub Actions on a push: the pushed commit and branch, no pull request', () => {
    const change = ciChangeOf(
      'github',
      { GITHUB_TOKEN: 't', GITHUB_REPOSITORY: 'shop/web', GITHUB_SHA: HEAD.toUpperCase(), GITHUB_REF_NAME: 'main' },
      noFile,
    );
    expect(change).toMatchObject({ commit: HEAD, branch: 'main', pullRequest: undefined });
  });

  it("Gitea Actions: GitHub's variables, its API under the server's /api/v1, GITEA_TOKEN first", () => {
    const change = ciChangeOf(
      'gitea',
      {
        GITEA_TOKEN: 'gitea-token',
        GITHUB_TOKEN: 'other',
        GITHUB_SERVER_URL: 'https://git.example/',
        GITHUB_REPOSITORY: 'shop/web',
        GITHUB_SHA: HEAD,
        GITHUB_REF: 'refs/pull/7/head',
      },
      noFile,
    );
    expect(change.target).toEqual({
      forge: 'gitea',
      apiUrl: 'https://git.example/api/v1',
      repository: 'shop/web',
      token: 'gitea-token',
    });
    expect(change.pullRequest).toBe(7);
  });

  it('GitLab CI on a merge request', () => {
    const change = ciChangeOf(
      'gitlab',
      {
        CI_API_V4_URL: 'https://gitlab.example/api/v4',
        CI_PROJECT_ID: '1234',
        CI_COMMIT_SHA: HEAD,
        CI_MERGE_REQUEST_IID: '9',
        CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: 'lazy-hero',
        CI_COMMIT_REF_NAME: 'refs/merge-requests/9/head',
        GITLAB_TOKEN: 'glpat-x',
      },
      noFile,
    );
    expect(change).toEqual({
      target: { forge: 'gitlab', apiUrl: 'https://gitlab.example/api/v4', repository: '1234', token: 'glpat-x' },
      commit: HEAD,
      branch: 'lazy-hero',
      pullRequest: 9,
    });
  });

  it("GitLab merged results pipelines: the merge request's head, not the merge commit", () => {
    const env = {
      CI_API_V4_URL: 'https://gitlab.example/api/v4',
      CI_PROJECT_ID: '1234',
      CI_COMMIT_SHA: MERGE,
      CI_MERGE_REQUEST_IID: '9',
      CI_MERGE_REQUEST_SOURCE_BRANCH_SHA: HEAD,
      GITLAB_TOKEN: 'glpat-x',
    };
    expect(ciChangeOf('gitlab', env, noFile).commit).toBe(HEAD);
    // A merge request pipeline (not merged results) leaves it empty.
    expect(ciChangeOf('gitlab', { ...env, CI_MERGE_REQUEST_SOURCE_BRANCH_SHA: '' }, noFile).commit).toBe(MERGE);
  });

  it('names every missing or malformed variable at once, and never repeats a token', () => {
    let error: unknown;
    try {
      ciChangeOf('gitlab', { CI_COMMIT_SHA: 'not-a-sha', GITLAB_TOKEN: '' }, noFile);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = String((error as ConfigError).message) + (error as ConfigError).problems.join('\n');
    for (const name of ['CI_API_V4_URL', 'CI_PROJECT_ID', 'CI_COMMIT_SHA', 'GITLAB_TOKEN'])
      expect(text).toContain(name);
  });

  it('Gitea without its API or server URL is a configuration error, not a guess', () => {
    expect(() => ciChangeOf('gitea', { GITEA_TOKEN: 't', GITHUB_REPOSITORY: 'a/b', GITHUB_SHA: HEAD }, noFile)).toThrow(
      ConfigError,
    );
  });
});
