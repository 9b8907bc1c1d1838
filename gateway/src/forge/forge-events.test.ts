import { describe, expect, it } from 'vitest';
import { payloadRepositoryKeys, readForgeEvent } from './forge-events.ts';

// Payloads shaped as each forge's webhook documentation shows them, cut to a few fields and
// with fields the receiver does not read left in (every object is read loosely).
const githubDeploymentStatus = (state: string) => ({
  action: 'created',
  deployment_status: {
    id: 1234567890,
    state,
    description: '',
    environment: 'Preview',
    target_url: '',
    environment_url: 'https://shop-git-faster-acme.vercel.app',
    created_at: '2026-11-26T03:00:00Z',
  },
  deployment: {
    id: 987654321,
    sha: '2C9A3F1E0B8D7C6A5F4E3D2C1B0A9F8E7D6C5B4A'.toLowerCase(),
    ref: 'faster-cart',
    task: 'deploy',
    environment: 'Preview',
  },
  repository: { id: 1, name: 'Shop', full_name: 'Acme/Shop', private: true },
  sender: { login: 'vercel[bot]' },
});

const gitlabDeployment = (status: string) => ({
  object_kind: 'deployment',
  status,
  status_changed_at: '2021-04-28 21:50:00 +0200',
  deployment_id: 15,
  deployable_id: 796,
  environment: 'staging',
  environment_external_url: 'https://staging.example.com',
  project: { id: 30, name: 'test-deployment-webhooks', path_with_namespace: 'Root/test-deployment-webhooks' },
  short_sha: '279484c0',
  ref: '1.0.0',
  sha: '279484c09fbe69ededfced8c1bb6e6d24616b468',
});

const giteaPullRequest = (action: string) => ({
  action,
  number: 2,
  pull_request: {
    id: 2,
    number: 2,
    title: 'Faster cart',
    head: { label: 'faster', ref: 'faster', sha: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678' },
    base: { label: 'main', ref: 'main', sha: '0000000000000000000000000000000000000001' },
  },
  repository: { id: 1, full_name: 'Acme/Shop' },
});

describe('the repository a payload names', () => {
  it('is owner/name, lower-cased, for GitHub and Gitea; path and id for GitLab', () => {
    expect(payloadRepositoryKeys('github', githubDeploymentStatus('success'))).toEqual(['acme/shop']);
    expect(payloadRepositoryKeys('gitea', giteaPullRequest('opened'))).toEqual(['acme/shop']);
    expect(payloadRepositoryKeys('gitlab', gitlabDeployment('success'))).toEqual([
      'root/test-deployment-webhooks',
      '30',
    ]);
  });

  it('is none when the payload names none', () => {
    expect(payloadRepositoryKeys('github', { repository: { full_name: 42 } })).toEqual([]);
    expect(payloadRepositoryKeys('gitlab', {})).toEqual([]);
    expect(payloadRepositoryKeys('gitea', 'text')).toEqual([]);
  });
});

describe('a verified event', () => {
  it('GitHub: a successful deployment_status is a preview at its environment URL', () => {
    expect(readForgeEvent('github', 'deployment_status', githubDeploymentStatus('success'))).toEqual({
      preview: {
        key: 'github:1234567890',
        origin: 'https://shop-git-faster-acme.vercel.app',
        revision: { commit: '2c9a3f1e0b8d7c6a5f4e3d2c1b0a9f8e7d6c5b4a', branch: 'faster-cart' },
      },
    });
    expect(readForgeEvent('github', 'deployment_status', githubDeploymentStatus('pending'))).toEqual({
      ignored: 'deployment state pending is not success',
    });
    expect(readForgeEvent('github', 'push', {})).toEqual({ ignored: 'event push is not deployment_status' });
    // target_url is the deployment's log (a CI or GitHub page), never the preview: no origin, so
    // the link's template (if any) makes one.
    const logOnly = githubDeploymentStatus('success');
    logOnly.deployment_status = {
      ...logOnly.deployment_status,
      environment_url: '',
      target_url: 'https://github.com/acme/shop/actions/runs/123',
    };
    expect(readForgeEvent('github', 'deployment_status', logOnly)).toMatchObject({ preview: { origin: null } });
    const bad = readForgeEvent('github', 'deployment_status', { deployment_status: { id: 1, state: 'success' } });
    expect(bad).toEqual({ ignored: expect.stringMatching(/^not a deployment_status event this receiver can read/) });
  });

  it('GitLab: a successful Deployment Hook is a preview at its external URL, keyed by deployment and status', () => {
    expect(readForgeEvent('gitlab', 'Deployment Hook', gitlabDeployment('success'))).toEqual({
      preview: {
        key: 'gitlab:30:15:success',
        origin: 'https://staging.example.com',
        revision: { commit: '279484c09fbe69ededfced8c1bb6e6d24616b468', branch: '1.0.0' },
      },
    });
    expect(readForgeEvent('gitlab', 'Deployment Hook', gitlabDeployment('running'))).toEqual({
      ignored: 'deployment status running is not success',
    });
    expect(readForgeEvent('gitlab', 'Push Hook', {})).toEqual({ ignored: 'event Push Hook is not Deployment Hook' });
  });

  it('Gitea: a pull request opened, synchronized or reopened is a preview of its head, keyed by repository, number and head', () => {
    for (const action of ['opened', 'synchronized', 'reopened'])
      expect(readForgeEvent('gitea', 'pull_request', giteaPullRequest(action))).toEqual({
        preview: {
          key: 'gitea:acme/shop:2:a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
          origin: null,
          revision: { commit: 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678', branch: 'faster', pullRequest: 2 },
        },
      });
    expect(readForgeEvent('gitea', 'pull_request', giteaPullRequest('closed'))).toEqual({
      ignored: 'pull request action closed is not measured',
    });
    expect(readForgeEvent('gitea', undefined, {})).toEqual({ ignored: 'event (none) is not pull_request' });
  });

  it('refuses unbounded or malformed fields rather than reading them', () => {
    const long = githubDeploymentStatus('success');
    long.deployment.ref = 'x'.repeat(300);
    expect(readForgeEvent('github', 'deployment_status', long)).toHaveProperty('ignored');
    const notSha = gitlabDeployment('success');
    notSha.sha = 'not-a-sha';
    expect(readForgeEvent('gitlab', 'Deployment Hook', notSha)).toHaveProperty('ignored');
  });
});
