import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditResultSchema } from '@perfwatch/common';
import { DEMO_LOGIN, startDemoSite, type DemoSite } from '@perfwatch/local';
import { runPerfwatch, spawnGateway, spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats } from '../support/test-services.ts';

// Issue 18's pages behind a login, with real parts: a `perfwatch gateway` and a `perfwatch agent`
// process (real Chromium and Lighthouse) on nats-server and the MongoDB-wire server, credentials
// set with `perfwatch admin set-auth`, a fixture site whose /account/ page lets in only a session
// cookie or a bearer token (anyone else is sent to /login.html), and whose picture comes from
// another origin. Every log line of both processes, every document of the database and every
// API answer is searched for the secrets afterwards.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let site: DemoSite;
let gateway: { process: PerfwatchProcess; url: string };
let agent: PerfwatchProcess;
let token: string;
let dir: string;
const db = { MONGODB_URI: '', MONGODB_DB: `pwauth_${randomUUID().slice(0, 8)}` };
const secretsKey = randomBytes(32).toString('base64');
const seen: Array<{ host: string; path: string; authorization: string | undefined; cookie: string | undefined }> = [];
const answers: string[] = [];
let account: string;

const SECRETS = [DEMO_LOGIN.cookie.value, DEMO_LOGIN.bearer, DEMO_LOGIN.password];

beforeAll(async () => {
  db.MONGODB_URI = inject('mongoUri');
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-auth-'));
  site = await startDemoSite({
    onRequest: ({ host, path, headers }) =>
      seen.push({
        host,
        path,
        authorization: headers['authorization'] as string | undefined,
        cookie: headers['cookie'] as string | undefined,
      }),
  });
  account = `${site.url}account/`;
  nats = await isolatedNats();
  const env = { ...db, PERFWATCH_SECRETS_KEY: secretsKey };
  const created = await runPerfwatch(['admin', 'create-user', 'shop', '--json'], env);
  expect(created.code, created.output).toBe(0);
  token = JSON.parse(created.output.trim().split('\n').at(-1)!).token;
  for (const [i, url] of [account, `${account}?cookie`, `${account}?header`, `${account}?script`].entries()) {
    const added = await runPerfwatch(
      ['admin', 'add-project', 'shop', url, '--locations', 'london', '--runs', '1'],
      env,
    );
    expect(added.code, `${i}: ${added.output}`).toBe(0);
  }
  // The london agent is this test's own: its operator is trusted with the credentials.
  gateway = await spawnGateway({
    ...env,
    NATS_URL: nats.url,
    LOG_LEVEL: 'debug',
    MAX_RETESTS: '0',
    PERFWATCH_TRUSTED_LOCATIONS: 'london',
  });
  agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: 'london',
    PERFWATCH_AGENT_ID: 'london-auth',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8,::1/128',
    LOG_LEVEL: 'debug',
  });
  await agent.waitFor(/agent serving location/);
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await gateway?.process.stop();
  await nats?.dispose();
  await site?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function api(path: string, params: Record<string, string>): Promise<unknown> {
  const res = await fetch(`${gateway.url}/v1/${path}?${new URLSearchParams(params)}`, {
    headers: { Authorization: token },
  });
  const text = await res.text();
  answers.push(text);
  expect(res.status, text.slice(0, 300)).toBe(200);
  return JSON.parse(text) as unknown;
}

/** A sync desktop update of the project; the URL Lighthouse measured in the end. */
async function measured(url: string): Promise<string> {
  const cell = auditResultSchema.parse(await api('update', { url, device: 'desktop' })).desktop!.london!;
  return (cell.lighthouse as unknown as { finalDisplayedUrl: string }).finalDisplayedUrl;
}

const admin = (args: string[]) => runPerfwatch(['admin', ...args], { ...db, PERFWATCH_SECRETS_KEY: secretsKey });

describe('pages behind a login', () => {
  it('without credentials measures the login page, and the result says so in its final URL', async () => {
    expect(await measured(account)).toBe(`${site.url}login.html`);
  }, 180_000);

  it('with a session cookie, a bearer header or a login script measures the page itself', async () => {
    const cookie = await admin([
      'set-auth',
      'shop',
      `${account}?cookie`,
      '--cookie',
      `${DEMO_LOGIN.cookie.name}=${DEMO_LOGIN.cookie.value}`,
    ]);
    expect(cookie.code, cookie.output).toBe(0);
    expect(cookie.output).toContain(`sealed: cookies ${DEMO_LOGIN.cookie.name}`);
    const header = await admin([
      'set-auth',
      'shop',
      `${account}?header`,
      '--header',
      `Authorization: Bearer ${DEMO_LOGIN.bearer}`,
    ]);
    expect(header.code, header.output).toBe(0);
    const script = join(dir, 'login.json');
    await writeFile(
      script,
      JSON.stringify([
        { action: 'goto', url: `${site.url}login.html` },
        { action: 'fill', selector: '#user', value: DEMO_LOGIN.user },
        { action: 'fill', selector: '#password', value: DEMO_LOGIN.password },
        { action: 'click', selector: '#sign-in' },
        { action: 'waitFor', selector: 'h1' },
      ]),
    );
    const login = await admin(['set-auth', 'shop', `${account}?script`, '--login-script', script]);
    expect(login.code, login.output).toBe(0);
    expect(login.output).toContain('a login script of 5 step(s)');

    seen.length = 0;
    expect(await measured(`${account}?cookie`)).toBe(`${account}?cookie`);
    expect(await measured(`${account}?header`)).toBe(`${account}?header`);
    expect(await measured(`${account}?script`)).toBe(`${account}?script`);
    // The credentials went to the page's origin only: the picture from localhost came without them.
    const port = new URL(site.url).port;
    const elsewhere = seen.filter((r) => r.host === `localhost:${port}`);
    expect(elsewhere.length).toBeGreaterThanOrEqual(3);
    for (const r of elsewhere) {
      expect(r.authorization).toBeUndefined();
      expect(r.cookie ?? '').not.toContain(DEMO_LOGIN.cookie.value);
    }
    expect(seen.some((r) => r.host === `127.0.0.1:${port}` && r.authorization === `Bearer ${DEMO_LOGIN.bearer}`)).toBe(
      true,
    );
  }, 300_000);

  it('keeps the secrets out of every log line, the database and every API answer', async () => {
    await api('projects', {});
    const day = new Date().toISOString().slice(0, 10);
    await api('overview', { startDate: day, endDate: day });
    for (const url of [`${account}?cookie`, `${account}?header`, `${account}?script`]) {
      const dates = (await api('updates', { url })) as { desktop: Array<{ date: string }> };
      await api('audit', { url, date: dates.desktop.at(-1)!.date });
    }
    const mongo = new MongoClient(db.MONGODB_URI);
    let dump = '';
    try {
      const database = mongo.db(db.MONGODB_DB);
      for (const { name } of await database.listCollections().toArray())
        dump += JSON.stringify(await database.collection(name).find().toArray());
    } finally {
      await mongo.close();
    }
    expect(dump).toContain('pwsec1.');
    for (const [where, text] of [
      ['gateway log', gateway.process.output()],
      ['agent log', agent.output()],
      ['database', dump],
      ['API answers', answers.join('\n')],
    ] as const) {
      expect(text.length, where).toBeGreaterThan(100);
      for (const secret of SECRETS) expect(text.includes(secret), `${where} holds a secret`).toBe(false);
    }
  }, 60_000);

  it('rotates the key: resealed credentials let the page in on a gateway with the new key; one with the old key alone says it cannot read them', async () => {
    const next = randomBytes(32).toString('base64');
    const rotated = await runPerfwatch(['admin', 'rotate-secrets-key'], {
      ...db,
      PERFWATCH_SECRETS_KEY: next,
      PERFWATCH_SECRETS_KEY_PREVIOUS: secretsKey,
    });
    expect(rotated.code, rotated.output).toBe(0);
    expect(rotated.output).toContain('resealed the credentials of 3 project(s)');
    // A gateway with the old key alone cannot read them now, and says so instead of measuring the login page.
    const res = await fetch(
      `${gateway.url}/v1/update?${new URLSearchParams({ url: `${account}?cookie`, device: 'desktop' })}`,
      { headers: { Authorization: token } },
    );
    expect(res.status).toBe(503);
    expect(await res.text()).toMatch(/credentials for its login cannot be read/);
    const renewed = await spawnGateway({
      ...db,
      NATS_URL: nats.url,
      PERFWATCH_SECRETS_KEY: next,
      MAX_RETESTS: '0',
      PERFWATCH_TRUSTED_LOCATIONS: 'london',
    });
    try {
      const update = await fetch(
        `${renewed.url}/v1/update?${new URLSearchParams({ url: `${account}?cookie`, device: 'desktop' })}`,
        { headers: { Authorization: token } },
      );
      const body = await update.text();
      expect(update.status, body.slice(0, 300)).toBe(200);
      expect(
        (
          auditResultSchema.parse(JSON.parse(body)).desktop!.london!.lighthouse as unknown as {
            finalDisplayedUrl: string;
          }
        ).finalDisplayedUrl,
      ).toBe(`${account}?cookie`);
    } finally {
      await renewed.process.stop();
    }
  }, 120_000);
});
