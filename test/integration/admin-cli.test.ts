import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { main } from '../../gateway/src/admin/admin-cli.ts';
import { openProjectAuth } from '../../gateway/src/projects/project-auth.ts';
import { createSecretBox } from '../../gateway/src/accounts/secret-box.ts';
import { MongoStore } from '@perfwatch/gateway';
import { lighthouseKpis } from '@perfwatch/common';
import { loadLhr } from '../support/lhr-fixtures.ts';
import { newCell } from '../support/new-cells.ts';
import { kpiRows } from '../support/kpi-rows.ts';

function sink() {
  let text = '';
  const stream = new Writable({ write: (chunk, _enc, done) => ((text += String(chunk)), done()) });
  return { stream, text: () => text };
}

async function admin(env: Record<string, string>, ...argv: string[]) {
  const out = sink();
  const err = sink();
  const code = await main(['admin', ...argv], env, { out: out.stream, err: err.stream });
  return { code, out: out.text(), err: err.text() };
}

describe('perfwatch admin', () => {
  const env = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: `pwtest_${randomUUID().slice(0, 8)}` };

  it('creates a user and prints its token once; only the digest is stored', async () => {
    const created = await admin(env, 'create-user', 'ops-team');
    expect(created.code).toBe(0);
    const token = /token \(shown once, keep it secret\): (pw_\S+)/.exec(created.out)?.[1];
    expect(token).toBeDefined();

    const store = new MongoStore({ uri: env.MONGODB_URI, dbName: env.MONGODB_DB });
    await store.init();
    try {
      const record = await store.findToken(token!.slice(3, 11));
      expect(record!.digest).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(record)).not.toContain(token!.slice(3));
    } finally {
      await store.close();
    }

    expect((await admin(env, 'create-user', 'ops-team')).code).toBe(1);
  });

  it("sets a project's budgets, adds webhooks (the secret last), lists their deliveries, removes them", async () => {
    await admin(env, 'create-user', 'alerting');
    await admin(env, 'add-project', 'alerting', 'https://alerts.example/');
    const set = await admin(
      env,
      'set-budgets',
      'alerting',
      'https://alerts.example/',
      '--budget',
      'performance=90',
      '--budget',
      'lcp=2500',
      '--max-regression',
      'tbt=20',
      '--json',
    );
    expect(set.code, set.err).toBe(0);
    expect(JSON.parse(set.out)).toEqual({
      url: 'https://alerts.example/',
      budgets: { performance: 90, lcp: 2500 },
      maxRegression: { tbt: 20 },
    });
    const badKey = await admin(env, 'set-budgets', 'alerting', 'https://alerts.example/', '--budget', 'speed=1');
    expect(badKey.code).toBe(1);
    expect(badKey.err).toMatch(/unknown budget key "speed"/);
    expect((await admin(env, 'set-budgets', 'alerting', 'https://other.example/')).err).toMatch(
      /no project at https:\/\/other\.example\//,
    );

    const allow = { ...env, PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8' };
    const added = await admin(
      allow,
      'add-webhook',
      'alerting',
      'http://127.0.0.1:9/hooks',
      '--project',
      'https://alerts.example/',
      '--format',
      'slack',
    );
    expect(added.code, added.err).toBe(0);
    const secret = added.out.trim().split(/\s+/).at(-1)!;
    expect(secret).toMatch(/^pwhs_[A-Za-z0-9_-]{43}$/);
    // Private targets are refused unless PERFWATCH_ALLOW_TARGETS allows them.
    const refused = await admin(env, 'add-webhook', 'alerting', 'http://127.0.0.1:9/hooks');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/not a public address/);
    expect((await admin(allow, 'add-webhook', 'alerting', 'http://127.0.0.1:9/', '--format', 'xml')).err).toMatch(
      /--format is json or slack/,
    );

    const listed = await admin(env, 'webhook-deliveries', 'alerting');
    const id = /^([0-9a-f]{24}) {2}http:\/\/127\.0\.0\.1:9\/hooks {2}\[slack, https:\/\/alerts\.example\/\]$/m.exec(
      listed.out,
    )?.[1];
    expect(id, listed.out).toBeDefined();
    expect(listed.out).toContain('no deliveries');
    expect(listed.out).not.toContain(secret);
    expect((await admin(env, 'remove-webhook', 'alerting', id!)).code).toBe(0);
    expect((await admin(env, 'webhook-deliveries', 'alerting')).out).toBe('alerting has no webhooks\n');
    expect((await admin(env, 'remove-webhook', 'alerting', id!)).code).toBe(1);
  });

  it('recompute-kpis rebuilds the KPI records of snapshots stored by an older version from their results', async () => {
    const store = new MongoStore({ uri: env.MONGODB_URI, dbName: env.MONGODB_DB });
    await store.init();
    try {
      const user = await store.createUser('kpi-owner');
      const project = await store.addProject({
        userId: user.id,
        url: 'https://kpi.example/',
        domain: 'kpi.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const lighthouse = loadLhr('mobile', 1);
      const date = new Date('2026-03-01T09:00:00Z');
      // As version 1 stored it: the seed's performance fields only.
      const seedOnly = lighthouseKpis(lighthouse).map((k) =>
        k.kpi === 'performance'
          ? {
              ...k,
              data: Object.fromEntries(
                Object.entries(k.data as object).filter(([key]) =>
                  ['si', 'fcp', 'fmp', 'tti', 'fCPUi', 'mpFID', 'score'].includes(key),
                ),
              ),
            }
          : k,
      );
      await store.saveSnapshot({
        project,
        updateId: 'kpi-v1',
        date,
        updateType: 'scheduled',
        results: [
          newCell({
            device: 'mobile',
            location: 'london',
            median: 1,
            runs: [],
            lighthouse,
            crux: { url: null },
            elementCount: 1,
            kpis: [...seedOnly, { section: 'SECURITY', kpi: 'tls', data: { ok: true } }],
          }),
        ],
      });

      const run = await admin(env, 'recompute-kpis');
      expect(run.code, run.err).toBe(0);
      expect(run.out).toMatch(/KPI records of [1-9]\d* snapshot\(s\) rebuilt to version 2/);
      const records: Array<{ section: string; kpi: string; data: unknown }> = [];
      for (const row of await kpiRows(store, { userId: user.id, from: date, to: new Date(date.getTime() + 1_000) }))
        records.push(row);
      const performance = records.find((r) => r.kpi === 'performance')!.data as Record<string, number | null>;
      expect(performance['lcp']).toBeCloseTo(lighthouse.audits['largest-contentful-paint']!.numericValue!, 1);
      expect(performance['fcp']).toBe(
        (seedOnly.find((k) => k.kpi === 'performance')!.data as Record<string, number>)['fcp'],
      );
      // What cannot be measured again stays as it was.
      expect(records.filter((r) => r.section === 'SECURITY').map((r) => r.data)).toEqual([{ ok: true }]);
      expect((await admin(env, 'recompute-kpis')).out).toMatch(/of 0 snapshot/);
    } finally {
      await store.close();
    }
  });

  it('adds projects with locations and runs, lists them as JSON, revokes tokens', async () => {
    await admin(env, 'create-user', 'web');
    const added = await admin(
      env,
      'add-project',
      'web',
      'https://Shop.Example',
      '--locations',
      'tokyo,london',
      '--runs',
      '5',
    );
    expect(added.code).toBe(0);
    const listed = JSON.parse((await admin(env, 'list', '--json')).out);
    expect(listed.find((u: { user: string }) => u.user === 'web').projects).toEqual([
      {
        url: 'https://shop.example/',
        locations: ['tokyo', 'london'],
        defaultLocation: 'tokyo',
        runs: 5,
        schedule: null,
      },
    ]);

    const bad = await admin(env, 'add-project', 'web', 'https://b.example/', '--locations', 'mars');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/unknown location.*mars/);

    // Runs per update: 3 (a median of three) unless set, from 1 to 9.
    for (const runs of ['0', '10']) {
      const refused = await admin(env, 'add-project', 'web', 'https://runs.example/', '--runs', runs);
      expect(refused.code, runs).toBe(1);
      expect(refused.err).toMatch(/runs is a whole number from 1 to 9/);
    }
    expect((await admin(env, 'add-project', 'web', 'https://runs.example/')).code).toBe(0);
    const byDefault = JSON.parse((await admin(env, 'list', '--json')).out).find(
      (u: { user: string }) => u.user === 'web',
    ).projects;
    expect(byDefault.find((p: { url: string }) => p.url === 'https://runs.example/').runs).toBe(3);

    // Credentials in a project URL are refused, and not repeated in the message.
    const secret = await admin(env, 'add-project', 'web', 'https://bob:hunter2@private.example/app');
    expect(secret.code).toBe(1);
    expect(secret.err).toMatch(/must not carry credentials.*https:\/\/private\.example\/app/);
    expect(secret.err + secret.out).not.toMatch(/hunter2/);

    const { out } = await admin(env, 'create-token', 'web', '--json');
    const { prefix } = JSON.parse(out);
    expect((await admin(env, 'revoke-token', prefix)).code).toBe(0);
    expect((await admin(env, 'revoke-token', prefix)).code).toBe(1);
  });

  it('validates a cron schedule and removes a project with its data', async () => {
    await admin(env, 'create-user', 'sched');
    const bad = await admin(env, 'add-project', 'sched', 'https://c.example/', '--schedule', 'every tuesday');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/not a cron expression/);
    expect((await admin(env, 'add-project', 'sched', 'https://c.example/', '--schedule', '*/15 * * * *')).code).toBe(0);
    const listed = JSON.parse((await admin(env, 'list', '--json')).out);
    expect(listed.find((u: { user: string }) => u.user === 'sched').projects[0].schedule).toBe('*/15 * * * *');
    expect((await admin(env, 'remove-project', 'sched', 'https://c.example/')).code).toBe(0);
    expect((await admin(env, 'remove-project', 'sched', 'https://c.example/')).code).toBe(1);
    const after = JSON.parse((await admin(env, 'list', '--json')).out);
    expect(after.find((u: { user: string }) => u.user === 'sched').projects).toEqual([]);
  });

  it('issues tokens that expire (a duration or a date) and lists each with its expiry; refuses an expiry it cannot read', async () => {
    const before = Date.now();
    const created = await admin(env, 'create-user', 'expiring', '--expires', '30d', '--json');
    const after = Date.now();
    expect(created.code, created.err).toBe(0);
    const first = JSON.parse(created.out) as { prefix: string; expiresAt: string };
    // Thirty days from the moment it was issued, which lies between these two readings.
    expect(Date.parse(first.expiresAt)).toBeGreaterThanOrEqual(before + 30 * 86_400_000);
    expect(Date.parse(first.expiresAt)).toBeLessThanOrEqual(after + 30 * 86_400_000);
    const dated = await admin(env, 'create-token', 'expiring', '--expires', '2099-01-31');
    expect(dated.code, dated.err).toBe(0);
    expect(dated.out).toMatch(
      /^token for expiring \(shown once, keep it secret\): pw_\S+\nexpires 2099-01-31T00:00:00\.000Z\n$/,
    );
    const forever = await admin(env, 'create-token', 'expiring');
    expect(forever.out).toMatch(/\nno expiry\n$/);

    const listed = await admin(env, 'list');
    const block = listed.out.split(/\n(?=\S)/).find((b) => b.startsWith('expiring\n'))!;
    expect(block).toContain(`token ${first.prefix}  created `);
    expect(block).toContain(`expires ${first.expiresAt}`);
    expect(block).toContain('expires 2099-01-31T00:00:00.000Z');
    expect(block).toContain('no expiry');
    const json = JSON.parse((await admin(env, 'list', '--json')).out) as Array<{
      user: string;
      tokens: Array<{ prefix: string; expiresAt: string | null; expired: boolean; revokedAt: string | null }>;
    }>;
    const tokens = json.find((u) => u.user === 'expiring')!.tokens;
    expect(tokens.map((t) => [t.expiresAt === null, t.expired, t.revokedAt])).toEqual([
      [false, false, null],
      [false, false, null],
      [true, false, null],
    ]);
    expect(JSON.stringify(json)).not.toMatch(/digest|pw_/);

    for (const [given, said] of [
      ['30', /give a unit/],
      ['6M', /M reads as minutes/],
      ['next week', /not a duration/],
      ['2001-01-01', /not in the future/],
    ] as const) {
      const refused = await admin(env, 'create-token', 'expiring', '--expires', given);
      expect(refused.code, given).toBe(1);
      expect(refused.err).toMatch(said);
      expect(refused.out).toBe('');
    }
  });

  it('rotate-secrets-key goes on past credentials it cannot open, names them, and exits 1', async () => {
    const aKey = () => randomBytes(32).toString('base64');
    const [oldKey, newKey, strayKey] = [aKey(), aKey(), aKey()];
    const keyed = (key: string, previous?: string) => ({
      ...env,
      PERFWATCH_SECRETS_KEY: key,
      ...(previous ? { PERFWATCH_SECRETS_KEY_PREVIOUS: previous } : {}),
    });
    await admin(env, 'create-user', 'rotor');
    // Listed by URL: the one it cannot open comes first, so the others are reached only past it.
    const urls = ['https://a-stray.example/', 'https://b-one.example/', 'https://c-two.example/'];
    for (const url of urls) expect((await admin(env, 'add-project', 'rotor', url)).code).toBe(0);
    const setAuth = (key: string, url: string) => admin(keyed(key), 'set-auth', 'rotor', url, '--cookie', 'sid=s3cr3t');
    expect((await setAuth(strayKey, urls[0]!)).code).toBe(0);
    for (const url of urls.slice(1)) expect((await setAuth(oldKey, url)).code).toBe(0);

    const rotated = await admin(keyed(newKey, oldKey), 'rotate-secrets-key');
    expect(rotated.code).toBe(1);
    expect(rotated.out).toMatch(/^resealed the credentials of 2 project\(s\); 0 already under the current key/);
    expect(rotated.out).toMatch(
      /could not reseal the credentials of https:\/\/a-stray\.example\/ \(user rotor\): sealed under key [0-9a-f]{8}, which is neither/,
    );
    expect(rotated.err).toMatch(/1 project\(s\) and 0 webhook\(s\) kept secrets it could not open/);
    expect(rotated.out + rotated.err).not.toContain('s3cr3t');

    const store = new MongoStore({ uri: env.MONGODB_URI, dbName: env.MONGODB_DB });
    await store.init();
    try {
      const user = (await store.findUserByName('rotor'))!;
      const renewed = createSecretBox({ key: newKey });
      for (const url of urls.slice(1)) {
        const project = (await store.findProject(user.id, url))!;
        expect(openProjectAuth(renewed, project), url).toEqual({ cookies: [{ name: 'sid', value: 's3cr3t' }] });
      }
      const stray = (await store.findProject(user.id, urls[0]!))!;
      expect(openProjectAuth(createSecretBox({ key: strayKey }), stray)).toBeDefined();
    } finally {
      await store.close();
    }
    // Run again with the new key alone: the two are current, the stray one still named.
    const again = await admin(keyed(newKey), 'rotate-secrets-key');
    expect(again.code).toBe(1);
    expect(again.out).toMatch(/resealed the credentials of 0 project\(s\); 2 already under the current key/);
  });

  it('adds an organisation and its members, issues a ci token of one of its projects, lists both, removes a member', async () => {
    for (const user of ['squad-lead', 'squad-dev', 'squad-guest']) await admin(env, 'create-user', user);
    const added = await admin(env, 'add-org', 'checkout-squad');
    expect(added.code, added.err).toBe(0);
    expect(added.out).toMatch(/^organisation checkout-squad added; its first admin: perfwatch admin add-member/);
    expect((await admin(env, 'add-org', 'checkout-squad')).err).toMatch(/an organisation is named "checkout-squad"/);
    // A user's own organisation has their name.
    expect((await admin(env, 'add-org', 'squad-lead')).code).toBe(1);

    expect((await admin(env, 'add-member', 'checkout-squad', 'squad-lead', '--role', 'admin')).out).toBe(
      'squad-lead added to checkout-squad as admin\n',
    );
    await admin(env, 'add-member', 'checkout-squad', 'squad-dev', '--role', 'viewer');
    expect((await admin(env, 'add-member', 'checkout-squad', 'squad-dev', '--role', 'editor')).out).toBe(
      'squad-dev is now editor of checkout-squad (was viewer)\n',
    );
    await admin(env, 'add-member', 'checkout-squad', 'squad-guest', '--role', 'viewer');
    for (const [argv, said] of [
      [['add-member', 'checkout-squad', 'squad-guest'], /--role is viewer, editor, admin/],
      [['add-member', 'checkout-squad', 'squad-guest', '--role', 'owner'], /not "owner"/],
      [['add-member', 'checkout-squad', 'squad-lead', '--role', 'editor'], /last admin of checkout-squad/],
      [['remove-member', 'checkout-squad', 'squad-lead'], /last admin of checkout-squad/],
      [['add-member', 'no-such-org', 'squad-dev', '--role', 'viewer'], /no organisation named "no-such-org"/],
    ] as const) {
      const refused = await admin(env, ...argv);
      expect(refused.code, argv.join(' ')).toBe(1);
      expect(refused.err).toMatch(said);
    }
    const members = JSON.parse((await admin(env, 'list-members', 'checkout-squad', '--json')).out) as Array<{
      user: string;
      role: string;
      source: string;
    }>;
    expect(members.map((m) => [m.user, m.role, m.source]).sort()).toEqual([
      ['squad-dev', 'editor', 'manual'],
      ['squad-guest', 'viewer', 'manual'],
      ['squad-lead', 'admin', 'manual'],
    ]);
    expect((await admin(env, 'list-members', 'checkout-squad')).out).toMatch(
      /^squad-guest {2}viewer {2}\(manual, since /m,
    );

    // Projects are an organisation's: add-project takes its name as it takes a user's (their own organisation's).
    expect((await admin(env, 'add-project', 'checkout-squad', 'https://checkout.example/')).code).toBe(0);
    const ci = await admin(
      env,
      'create-token',
      'squad-dev',
      '--org',
      'checkout-squad',
      '--scope',
      'ci',
      '--projects',
      'https://Checkout.Example',
      '--label',
      'CI of checkout',
      '--expires',
      '2099-01-31',
    );
    expect(ci.code, ci.err).toBe(0);
    expect(ci.out).toMatch(
      /^token for squad-dev \(shown once, keep it secret\): pw_\S+\nexpires 2099-01-31T00:00:00\.000Z\nscope ci in checkout-squad for https:\/\/checkout\.example\/, label "CI of checkout"\n$/,
    );
    const prefix = /pw_(\S{8})/.exec(ci.out)![1]!;
    // An editor's token: as much as their role, never more.
    const editor = await admin(env, 'create-token', 'squad-dev', '--org', 'checkout-squad', '--scope', 'editor');
    expect(editor.code, editor.err).toBe(0);
    for (const [argv, said] of [
      [['--scope', 'admin'], /a admin token needs the admin role; squad-dev is editor of checkout-squad/],
      [
        ['--scope', 'ci', '--projects', 'https://elsewhere.example/'],
        /checkout-squad has no project at https:\/\/elsewhere\.example\//,
      ],
      [['--scope', 'ci'], /give --projects/],
      [['--scope', 'everything'], /--scope is read, ci, editor, admin; not "everything"/],
      [['--projects', 'https://checkout.example/'], /--projects goes with --scope ci only/],
    ] as const) {
      const refused = await admin(env, 'create-token', 'squad-dev', '--org', 'checkout-squad', ...argv);
      expect(refused.code, argv.join(' ')).toBe(1);
      expect(refused.err).toMatch(said);
      expect(refused.out).toBe('');
    }
    expect((await admin(env, 'create-token', 'squad-guest', '--org', 'squad-lead')).err).toMatch(
      /squad-guest is not a member of squad-lead/,
    );

    const listed = await admin(env, 'list-tokens', 'checkout-squad');
    expect(listed.out).toMatch(
      new RegExp(
        `^token ${prefix} {2}squad-dev {2}created \\S+ {2}expires 2099-01-31T00:00:00\\.000Z {2}scope ci {2}projects https://checkout\\.example/ {2}label "CI of checkout"$`,
        'm',
      ),
    );
    const json = JSON.parse((await admin(env, 'list-tokens', 'checkout-squad', '--json')).out) as Array<{
      prefix: string;
      user: string;
      scope: string;
      label: string | null;
    }>;
    expect(json.map((t) => [t.user, t.scope, t.label])).toEqual([
      ['squad-dev', 'ci', 'CI of checkout'],
      ['squad-dev', 'editor', null],
    ]);
    // Every user's own listing says where each token acts.
    const block = (await admin(env, 'list')).out.split(/\n(?=\S)/).find((b) => b.startsWith('squad-dev\n'))!;
    expect(block).toMatch(new RegExp(`token ${prefix} .* scope ci {2}org checkout-squad {2}projects https://checkout`));
    expect(block).toMatch(/scope admin {2}org squad-dev$/m);

    expect((await admin(env, 'remove-member', 'checkout-squad', 'squad-guest')).out).toBe(
      'squad-guest removed from checkout-squad\n',
    );
    expect((await admin(env, 'remove-member', 'checkout-squad', 'squad-guest')).err).toMatch(/is not a member/);
    expect((await admin(env, 'list-members', 'checkout-squad', '--json')).out).not.toContain('squad-guest');
  });

  it('explains its usage on a wrong call', async () => {
    const res = await admin(env, 'frobnicate');
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/usage: perfwatch admin/);
  });
});
