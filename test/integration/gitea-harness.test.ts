import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { commitStatusSchema, issueCommentSchema, startGitea, type Gitea } from '../support/gitea.ts';
import { measuredWait } from '../support/measured-wait.ts';

/**
 * The Gitea the forge tests report to is a real one: a user, a repository with two commits on
 * main, a branch `slower` and a pull request from it, all made through its API; a commit status
 * and one comment, edited, read back the way a report checks them; and a webhook to a server on
 * loopback delivered, signed, as the receiver will get it.
 */

const CONTEXT = 'perfwatch/mobile/frankfurt';

interface Delivery {
  event: string;
  signature: string;
  body: string;
  at: number;
}

async function receiver(): Promise<{ server: Server; url: string; deliveries: Delivery[] }> {
  const deliveries: Delivery[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      deliveries.push({
        event: String(request.headers['x-gitea-event']),
        signature: String(request.headers['x-gitea-signature']),
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
      });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/forge`, deliveries };
}

describe('a real Gitea for the forge tests', () => {
  let gitea: Gitea;
  let hooks: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    hooks = await receiver();
    gitea = await startGitea();
  });

  afterAll(async () => {
    await gitea?.stop();
    if (hooks) await new Promise((resolve) => hooks.server.close(resolve));
  });

  it('holds a pull request whose status and one edited comment read back through its API', async () => {
    const repo = 'site';
    const { fullName } = await gitea.createRepository(repo);
    expect(fullName).toBe(`${gitea.username}/${repo}`);
    await gitea.addWebhook(repo, { url: hooks.url, secret: 'hook-secret', events: ['pull_request'] });

    const first = await gitea.commitFile(repo, {
      branch: 'main',
      path: 'index.html',
      content: '<p>fast</p>',
      message: 'A page',
    });
    const base = await gitea.commitFile(repo, { branch: 'main', path: 'app.js', content: '1;', message: 'Its script' });
    const head = await gitea.commitFile(repo, {
      branch: 'main',
      newBranch: 'slower',
      path: 'app.js',
      content: 'for (let i = 0; i < 1e9; i++);',
      message: 'A slower script',
    });
    expect(new Set([first, base, head]).size).toBe(3);
    const opened = performance.now();
    const number = await gitea.openPullRequest(repo, { head: 'slower', base: 'main', title: 'Slower script' });
    const answered = performance.now();
    const pull = await gitea.api(
      'GET',
      `/repos/${fullName}/pulls/${number}`,
      z.object({ head: z.object({ sha: z.string(), ref: z.string() }), base: z.object({ ref: z.string() }) }),
    );
    expect(pull).toMatchObject({ head: { sha: head, ref: 'slower' }, base: { ref: 'main' } });

    // A status as a report sets it: the state is read back as `status`.
    const target = 'http://127.0.0.1:1/#/compare?url=a&baseUrl=b';
    await gitea.api('POST', `/repos/${fullName}/statuses/${head}`, commitStatusSchema, {
      state: 'failure',
      context: CONTEXT,
      description: 'LCP 2.4 s (+0.9 s), p = 0.008',
      target_url: target,
    });
    expect(await gitea.statuses(repo, head)).toEqual([
      expect.objectContaining({ status: 'failure', context: CONTEXT, target_url: target }),
    ]);

    // One comment, edited in place: still one, with the later text.
    const comment = await gitea.api('POST', `/repos/${fullName}/issues/${number}/comments`, issueCommentSchema, {
      body: '<!-- perfwatch -->\nfirst run',
    });
    await gitea.api('PATCH', `/repos/${fullName}/issues/comments/${comment.id}`, issueCommentSchema, {
      body: '<!-- perfwatch -->\nsecond run',
    });
    const comments = await gitea.comments(repo, number);
    expect(comments.map(({ id, body }) => ({ id, body }))).toEqual([
      { id: comment.id, body: '<!-- perfwatch -->\nsecond run' },
    ]);

    // The pull request's opening reached the server on loopback, signed with the hook's secret.
    await expect
      .poll(() => hooks.deliveries.filter((d) => d.event === 'pull_request').length, {
        timeout: measuredWait(gitea.startupMs, 1, { slack: 10, floorMs: 15_000 }),
        interval: 20,
      })
      .toBeGreaterThanOrEqual(1);
    const delivery = hooks.deliveries.find((d) => d.event === 'pull_request')!;
    expect(delivery.signature).toBe(createHmac('sha256', 'hook-secret').update(delivery.body).digest('hex'));
    expect(JSON.parse(delivery.body)).toMatchObject({
      action: 'opened',
      number,
      pull_request: { head: { sha: head } },
    });
    console.info(
      `gitea: started in ${Math.round(gitea.startupMs)} ms; pull_request webhook delivered ` +
        `${Math.round(delivery.at - opened)} ms after the request to open it began (answered after ` +
        `${Math.round(answered - opened)} ms)`,
    );
  });
});
