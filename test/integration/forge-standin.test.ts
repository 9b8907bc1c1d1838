import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FORGE_OPERATIONS, trimForgeDocument } from '../../scripts/trim-forge-openapi.ts';
import { DOCUMENTED_ANSWERS, startForgeStandIn, type ForgeName, type ForgeStandIn } from '../support/forge-standin.ts';

const SHA = '6dcb09b5b57875f334f61aebed695e2e4193db5e';
const TOKEN = 'forge-token';

function send(url: string, method: string, headers: Record<string, string>, body?: unknown) {
  return fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

function fixture(forge: ForgeName) {
  return JSON.parse(readFileSync(join(import.meta.dirname, `../fixtures/forges/${forge}-openapi.json`), 'utf8')) as {
    'x-perfwatch-trimmed-from': Record<string, string>;
    paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>;
    components: Record<string, unknown>;
  };
}

function reasonsOf(standIn: ForgeStandIn): string[] {
  return standIn.invalidRequests().map((request) => request.reasons.join('; '));
}

/** Follows `rel="next"` links from `first` and returns every page's items. */
async function allPages(first: string, headers: Record<string, string>): Promise<Array<{ body: string }>> {
  const items: Array<{ body: string }> = [];
  let next: string | undefined = first;
  while (next) {
    const response = await send(next, 'GET', headers);
    expect(response.status).toBe(200);
    items.push(...((await response.json()) as Array<{ body: string }>));
    next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
  }
  return items;
}

describe('the trimmed documents', () => {
  it.each(['github', 'gitlab'] as const)(
    '%s: hold exactly the operations perfwatch uses, with every component they reference',
    (forge: ForgeName) => {
      const document = fixture(forge);
      const operations = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.keys(item).map((method) => `${method} ${path}`),
      );
      expect(operations.sort()).toEqual([...FORGE_OPERATIONS[forge]].sort());
      // Trimming the fixture again changes nothing: no component it needs is missing, none is extra.
      const again = trimForgeDocument(forge, document, document['x-perfwatch-trimmed-from']);
      expect(again['paths']).toEqual(document.paths);
      expect(again['components']).toEqual(document.components);
    },
  );

  it.each(['github', 'gitlab'] as const)(
    '%s: the answers each operation documents are the table the stand-in states',
    (forge: ForgeName) => {
      const defined = Object.values(fixture(forge).paths)
        .flatMap((item) => Object.values(item))
        .filter((operation) => operation.operationId !== undefined)
        .map((operation) => [
          operation.operationId,
          Object.keys(operation.responses ?? {})
            .map(Number)
            .sort((a, b) => a - b),
        ]);
      expect(defined).toHaveLength(5);
      for (const [operationId, statuses] of defined) expect(DOCUMENTED_ANSWERS[String(operationId)]).toEqual(statuses);
    },
  );
});

describe('GitHub stand-in (api.github.com description)', () => {
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('answers a valid commit status per the document and records it', async () => {
    await using github = await startForgeStandIn({ forge: 'github', token: TOKEN });
    const status = {
      state: 'failure',
      context: 'perfwatch/mobile/eu',
      description: 'LCP 2.9 s (budget 2.5 s)',
      target_url: 'http://pw.test/#/compare?a=1',
    };
    const response = await send(
      `${github.apiUrl}/repos/octo/app/statuses/${SHA}`,
      'POST',
      { authorization: `token ${TOKEN}` },
      status,
    );
    expect(response.status).toBe(201);
    expect(response.headers.get('location')).toBe(`${github.apiUrl}/repos/octo/app/statuses/${SHA}`);
    expect(await response.json()).toMatchObject({ state: 'failure', context: 'perfwatch/mobile/eu' });
    expect(github.statuses(SHA)).toEqual([
      {
        state: 'failure',
        context: 'perfwatch/mobile/eu',
        description: status.description,
        targetUrl: status.target_url,
      },
    ]);
    expect(github.invalidRequests()).toEqual([]);
  });

  it('refuses a bogus state, a missing body field, a wrong token and a path the document lacks', async () => {
    await using github = await startForgeStandIn({ forge: 'github', token: TOKEN });
    github.seedPullRequest({ number: 7, commits: [SHA] });
    const statuses = `${github.apiUrl}/repos/octo/app/statuses/${SHA}`;
    const refused = [
      await send(statuses, 'POST', auth, { state: 'bogus' }),
      await send(`${github.apiUrl}/repos/octo/app/issues/7/comments`, 'POST', auth, { text: 'no body field' }),
      await send(statuses, 'POST', { authorization: 'Bearer wrong' }, { state: 'success' }),
      await send(`${github.apiUrl}/repos/octo/app/check-runs`, 'POST', auth, { name: 'x' }),
    ];
    expect(refused.map((response) => response.status)).toEqual([400, 400, 400, 400]);
    const reasons = reasonsOf(github);
    expect(reasons[0]).toMatch(/body.*allowed values/);
    expect(reasons[1]).toMatch(/must have required property 'body'/);
    expect(reasons[2]).toMatch(/authentication/);
    expect(reasons[3]).toMatch(/no operation of the document matches/);
    expect(github.invalidRequests().map((request) => request.operationId)).toEqual([
      'repos/create-commit-status',
      'issues/create-comment',
      'repos/create-commit-status',
      null,
    ]);
    expect(github.statuses(SHA)).toEqual([]);
  });

  it('creates, lists page by page with Link headers, and edits comments; finds the PR of a commit', async () => {
    await using github = await startForgeStandIn({ forge: 'github', token: TOKEN });
    github.seedPullRequest({ number: 7, commits: [SHA], head: 'slower-page' });
    github.seedComments(
      7,
      Array.from({ length: 34 }, (_, i) => `review ${i}`),
    );
    const comments = `${github.apiUrl}/repos/octo/app/issues/7/comments`;
    const created = await send(comments, 'POST', auth, { body: '<!-- perfwatch -->\nfirst report' });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: number };

    const first = await send(`${comments}?per_page=10`, 'GET', auth);
    expect(first.headers.get('link')).toMatch(/page=2>; rel="next".*page=4>; rel="last"/);
    const listed = await allPages(`${comments}?per_page=10`, auth);
    expect(listed).toHaveLength(35);
    expect(listed.at(-1)?.body).toContain('<!-- perfwatch -->');

    const edited = await send(`${github.apiUrl}/repos/octo/app/issues/comments/${id}`, 'PATCH', auth, {
      body: '<!-- perfwatch -->\nsecond',
    });
    expect(edited.status).toBe(200);
    expect(github.comments(7).filter((comment) => comment.body.includes('perfwatch'))).toMatchObject([
      { id, body: '<!-- perfwatch -->\nsecond' },
    ]);

    const pulls = await send(`${github.apiUrl}/repos/octo/app/commits/${SHA}/pulls`, 'GET', auth);
    expect(await pulls.json()).toMatchObject([{ number: 7, state: 'open', head: { ref: 'slower-page', sha: SHA } }]);
    expect(github.invalidRequests()).toEqual([]);
  });

  it('answers injected faults the way the document and GitHub define them', async () => {
    await using github = await startForgeStandIn({ forge: 'github', token: TOKEN });
    github.seedPullRequest({ number: 7, commits: [SHA] });
    const statuses = `${github.apiUrl}/repos/octo/app/statuses/${SHA}`;
    github.failNext('repos/create-commit-status', 'rate-limit');
    const limited = await send(statuses, 'POST', auth, { state: 'success' });
    expect(limited.status).toBe(403);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect(await limited.json()).toMatchObject({ message: expect.stringMatching(/rate limit exceeded/) });
    expect((await send(statuses, 'POST', auth, { state: 'success' })).status).toBe(201);

    github.failNext('issues/create-comment', 'validation');
    const invalid = await send(`${github.apiUrl}/repos/octo/app/issues/7/comments`, 'POST', auth, { body: 'x' });
    expect(invalid.status).toBe(422);
    expect(await invalid.json()).toMatchObject({ message: 'Validation Failed', errors: [{ field: 'body' }] });
    github.failNext('issues/list-comments', 410);
    expect((await send(`${github.apiUrl}/repos/octo/app/issues/7/comments`, 'GET', auth)).status).toBe(410);
    github.failNext('repos/list-pull-requests-associated-with-commit', 409);
    expect((await send(`${github.apiUrl}/repos/octo/app/commits/${SHA}/pulls`, 'GET', auth)).status).toBe(409);

    expect(() => github.failNext('repos/create-commit-status', 'validation')).toThrow(/defines no 422/);
    expect(() => github.failNext('issues/update-comment', 'secondary-rate-limit')).toThrow(/defines no 429/);
    expect(github.requests.filter((request) => request.fault).map((request) => request.fault)).toEqual([
      '403',
      '422',
      '410',
      '409',
    ]);
    expect(github.invalidRequests()).toEqual([]);
  });
});

describe('GitLab stand-in (openapi_v3.yaml)', () => {
  const auth = { 'private-token': TOKEN };

  it('answers a valid commit status with any of its token headers, by project id or path', async () => {
    await using gitlab = await startForgeStandIn({ forge: 'gitlab', token: TOKEN });
    const body = {
      state: 'failed',
      name: 'perfwatch/desktop/us',
      target_url: 'http://pw.test/#/compare?a=1',
      description: 'TBT +120 ms',
    };
    for (const [project, headers] of [
      ['42', { 'private-token': TOKEN }],
      ['group%2Fapp', { 'job-token': TOKEN }],
      ['42', { authorization: `Bearer ${TOKEN}` }],
    ] as const) {
      const response = await send(`${gitlab.apiUrl}/projects/${project}/statuses/${SHA}`, 'POST', headers, body);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ status: 'failed', name: 'perfwatch/desktop/us', sha: SHA });
    }
    expect(gitlab.statuses(SHA)).toHaveLength(3);
    expect(gitlab.statuses(SHA)[0]).toEqual({
      state: 'failed',
      context: 'perfwatch/desktop/us',
      description: body.description,
      targetUrl: body.target_url,
    });
    expect(gitlab.invalidRequests()).toEqual([]);
  });

  it('refuses a bogus state, a missing state, a note without body, a wrong token and another project', async () => {
    await using gitlab = await startForgeStandIn({ forge: 'gitlab', token: TOKEN });
    gitlab.seedPullRequest({ number: 3, commits: [SHA] });
    const statuses = `${gitlab.apiUrl}/projects/42/statuses/${SHA}`;
    const refused = [
      await send(statuses, 'POST', auth, { state: 'bogus' }),
      await send(statuses, 'POST', auth, { name: 'perfwatch' }),
      await send(`${gitlab.apiUrl}/projects/42/merge_requests/3/notes`, 'POST', auth, { note: 'x' }),
      await send(statuses, 'POST', { 'private-token': 'wrong' }, { state: 'success' }),
      await send(`${gitlab.apiUrl}/projects/7/statuses/${SHA}`, 'POST', auth, { state: 'success' }),
      await send(`${gitlab.apiUrl}/projects/42/merge_requests/three/notes`, 'GET', auth),
    ];
    expect(refused.map((response) => response.status)).toEqual([400, 400, 400, 400, 400, 400]);
    const reasons = reasonsOf(gitlab);
    expect(reasons).toEqual([
      expect.stringMatching(/allowed values/),
      expect.stringMatching(/required property 'state'/),
      expect.stringMatching(/required property 'body'/),
      expect.stringMatching(/authentication/),
      expect.stringMatching(/holds only the project 42/),
      expect.stringMatching(/path parameter noteable_id="three" is invalid/),
    ]);
    expect(gitlab.statuses(SHA)).toEqual([]);
  });

  it('creates, lists with x-next-page/x-total (newest first unless sort=asc), and edits notes; finds the MR of a commit', async () => {
    await using gitlab = await startForgeStandIn({ forge: 'gitlab', token: TOKEN });
    gitlab.seedPullRequest({ number: 3, commits: [SHA], head: 'slower-page' });
    gitlab.seedComments(
      3,
      Array.from({ length: 24 }, (_, i) => `review ${i}`),
    );
    const notes = `${gitlab.apiUrl}/projects/42/merge_requests/3/notes`;
    const created = await send(notes, 'POST', auth, { body: '<!-- perfwatch -->\nfirst report' });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: number };

    const first = await send(`${notes}?per_page=10&sort=asc`, 'GET', auth);
    expect(
      Object.fromEntries(
        ['x-total', 'x-total-pages', 'x-page', 'x-next-page', 'x-prev-page'].map((h) => [h, first.headers.get(h)]),
      ),
    ).toEqual({
      'x-total': '25',
      'x-total-pages': '3',
      'x-page': '1',
      'x-next-page': '2',
      'x-prev-page': '',
    });
    expect(((await first.json()) as Array<{ body: string }>)[0]?.body).toBe('review 0');
    const newest = (await (await send(notes, 'GET', auth)).json()) as Array<{ id: number }>;
    expect(newest).toHaveLength(20);
    expect(newest[0]?.id).toBe(id);
    const last = await send(`${notes}?per_page=10&page=3`, 'GET', auth);
    expect([last.headers.get('x-next-page'), ((await last.json()) as unknown[]).length]).toEqual(['', 5]);

    const edited = await send(`${notes}/${id}`, 'PUT', auth, { body: '<!-- perfwatch -->\nsecond' });
    expect(edited.status).toBe(200);
    expect(gitlab.comments(3).find((note) => note.id === id)?.body).toBe('<!-- perfwatch -->\nsecond');
    expect((await send(`${notes}/99999`, 'PUT', auth, { body: 'x' })).status).toBe(404);

    const mergeRequests = await send(
      `${gitlab.apiUrl}/projects/42/repository/commits/${SHA}/merge_requests`,
      'GET',
      auth,
    );
    expect(await mergeRequests.json()).toMatchObject([
      { iid: 3, state: 'opened', source_branch: 'slower-page', sha: SHA },
    ]);
    expect(gitlab.invalidRequests()).toEqual([]);
  });

  it('answers injected faults: rate limit 429, validation 400, and the statuses the document defines', async () => {
    await using gitlab = await startForgeStandIn({ forge: 'gitlab', token: TOKEN });
    gitlab.seedPullRequest({ number: 3, commits: [SHA] });
    const statuses = `${gitlab.apiUrl}/projects/42/statuses/${SHA}`;
    gitlab.failNext('postApiV4ProjectsIdStatusesSha', 'rate-limit');
    const limited = await send(statuses, 'POST', auth, { state: 'success' });
    expect(limited.status).toBe(429);
    expect([limited.headers.get('retry-after'), limited.headers.get('ratelimit-remaining')]).toEqual(['60', '0']);
    expect(await limited.text()).toBe('Retry later\n');
    gitlab.failNext('postApiV4ProjectsIdStatusesSha', 'validation');
    expect((await send(statuses, 'POST', auth, { state: 'success' })).status).toBe(400);
    gitlab.failNext('postApiV4ProjectsIdStatusesSha', 401);
    gitlab.failNext('postApiV4ProjectsIdStatusesSha', 409);
    expect((await send(statuses, 'POST', auth, { state: 'success' })).status).toBe(401);
    expect((await send(statuses, 'POST', auth, { state: 'success' })).status).toBe(409);
    expect((await send(statuses, 'POST', auth, { state: 'success' })).status).toBe(200);
    gitlab.failNext('getApiV4ProjectsIdMergeRequestsNoteableIdNotes', 404);
    expect((await send(`${gitlab.apiUrl}/projects/42/merge_requests/3/notes`, 'GET', auth)).status).toBe(404);

    expect(() => gitlab.failNext('postApiV4ProjectsIdMergeRequestsNoteableIdNotes', 409)).toThrow(/defines no 409/);
    expect(gitlab.statuses(SHA)).toHaveLength(1);
    expect(gitlab.invalidRequests()).toEqual([]);
  });
});
