import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readFile } from 'node:fs/promises';
import {
  BudgetSpecError,
  LIGHTHOUSE_KPI_VERSION,
  LOCATIONS,
  parseEnv,
  parseLimit,
  type Location,
  type PageAuth,
} from '@perfwatch/common';
import { adminSettings } from './admin-config.ts';
import { describeAuth } from '../projects/project-auth.ts';
import { createSecretBox, SecretKeyError } from '../accounts/secret-box.ts';
import { storeFromEnv } from '../store/open-store.ts';
import type { Store } from '../store/store.ts';
import { AdminError, createAdmin, type Admin, type IssuedTokenView, type TokenOptions } from './admin.ts';
import { recomputeKpis } from './recompute-kpis.ts';
import { createWebhookTargets } from '../alerts/webhook-targets.ts';
import { hasExpired, tokenExpiry, TokenExpiryError } from '../accounts/tokens.ts';

const USAGE = `usage: perfwatch admin <command>
  create-user NAME [--expires WHEN]
                                   create a user and print its first API token (shown once)
  create-token NAME [--expires WHEN]
                                   print a new API token for NAME (shown once); --expires: a duration
                                   (90d, 12h, 2w, 1y) or a date (2027-01-31: that day's start, UTC), after
                                   which the token is refused (without it: until revoked)
  revoke-token PREFIX              revoke the token whose prefix (first 8 characters after pw_) is PREFIX
  add-project NAME URL [--locations a,b] [--default-location a] [--runs N] [--schedule CRON]
  remove-project NAME URL          remove a project with all its snapshots
  set-budgets NAME URL [--budget KEY=N]... [--max-regression KEY=N]...
                                   replace the budgets every snapshot of the project is checked against
                                   (none given: the project has no budgets); keys as perfwatch update --ci
  add-webhook NAME TARGET_URL [--project URL] [--format json|slack]
                                   post NAME's budget and update events to TARGET_URL; prints the
                                   signing secret (shown once) as the last word
  remove-webhook NAME ID           remove a webhook with its deliveries
  webhook-deliveries NAME          NAME's webhooks and their newest deliveries, with their status
  list [--json]                    users, their projects and their tokens (prefix, expiry, revoked)
  set-auth NAME URL [--auth-file FILE] [--cookie NAME=VALUE]... [--header 'Name: value']... [--login-script FILE]
                                   credentials for a page behind a login, sealed with PERFWATCH_SECRETS_KEY;
                                   cookies and headers go to the project's origin only (a file keeps them
                                   out of the shell's history: {"cookies":[…],"headers":{…},"login":[…]})
  clear-auth NAME URL              forget a project's credentials
  rotate-secrets-key               reseal every project's credentials and webhook secrets under PERFWATCH_SECRETS_KEY
                                   (the old key in PERFWATCH_SECRETS_KEY_PREVIOUS); goes on past credentials
                                   it cannot open, names them, and exits 1
  recompute-kpis                   rebuild the KPI records of snapshots stored by an older version
                                   from their kept Lighthouse results (LIGHTHOUSE, PAGE_SOURCE, SAVINGS)
environment: MONGODB_URI, MONGODB_DB; PERFWATCH_ALLOW_TARGETS (private and plain-http webhook targets allowed);
             WEBHOOK_MAX_PER_USER (the gateway's); PERFWATCH_SECRETS_KEY, PERFWATCH_SECRETS_KEY_PREVIOUS (the gateway's,
             for credentials and webhook secrets); without MONGODB_URI, the embedded store of perfwatch start
             (PERFWATCH_DATA_DIR/perfwatch.sqlite, default ./data)`;

function parseLocations(text: string): Location[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = names.filter((n) => !(LOCATIONS as readonly string[]).includes(n));
  if (bad.length > 0) throw new AdminError(`unknown location(s) ${bad.join(', ')}; known: ${LOCATIONS.join(', ')}`);
  return names as Location[];
}

const OPTIONS = {
  locations: { type: 'string' },
  'default-location': { type: 'string' },
  runs: { type: 'string' },
  schedule: { type: 'string' },
  budget: { type: 'string', multiple: true, default: [] },
  'max-regression': { type: 'string', multiple: true, default: [] },
  project: { type: 'string' },
  format: { type: 'string' },
  'auth-file': { type: 'string' },
  cookie: { type: 'string', multiple: true, default: [] },
  header: { type: 'string', multiple: true, default: [] },
  'login-script': { type: 'string' },
  expires: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** What a command is given: the admin operations, the store, its arguments and options, where to write. */
interface CommandContext {
  admin: ReturnType<typeof createAdmin>;
  store: Store;
  args: string[];
  values: Values;
  out: NodeJS.WritableStream;
}

/** The expiry `--expires` gives a token issued now (none: it never expires). */
function expiryOf(values: Values): TokenOptions {
  if (values.expires === undefined) return {};
  try {
    return { expiresAt: tokenExpiry(values.expires, new Date()) };
  } catch (error) {
    if (error instanceof TokenExpiryError) throw new AdminError(error.message);
    throw error;
  }
}

/** When a token stops being accepted, as shown beside it. */
const expiryText = (expiresAt: Date | null): string => (expiresAt ? `expires ${expiresAt.toISOString()}` : 'no expiry');

/** A command that mints a token for the user it names and prints it, once (or its JSON), with its expiry. */
function printsToken(
  mint: (admin: Admin, user: string, options: TokenOptions) => Promise<IssuedTokenView>,
  said: (user: string, token: string) => string,
): { args: number; run(context: CommandContext): Promise<void> } {
  return {
    args: 1,
    run: async ({ admin, args, values, out }) => {
      const { user, token, prefix, expiresAt } = await mint(admin, args[0]!, expiryOf(values));
      out.write(
        values.json
          ? `${JSON.stringify({ user: user.name, token, prefix, expiresAt: expiresAt?.toISOString() ?? null })}\n`
          : `${said(user.name, token)}${expiryText(expiresAt)}\n`,
      );
    },
  };
}

/** Each command: how many arguments it takes, and what it does with them. */
const COMMANDS: Record<string, { args: number; run(context: CommandContext): Promise<void> }> = {
  'create-user': printsToken(
    (admin, name, options) => admin.createUser(name, options),
    (user, token) => `user ${user} created\ntoken (shown once, keep it secret): ${token}\n`,
  ),
  'create-token': printsToken(
    (admin, name, options) => admin.createToken(name, options),
    (user, token) => `token for ${user} (shown once, keep it secret): ${token}\n`,
  ),
  'revoke-token': {
    args: 1,
    run: async ({ admin, args, out }) => {
      await admin.revokeToken(args[0]!);
      out.write(`token ${args[0]} revoked\n`);
    },
  },
  'add-project': {
    args: 2,
    run: async ({ admin, args, values, out }) => {
      const project = await admin.addProject(args[0]!, args[1]!, {
        locations: values.locations ? parseLocations(values.locations) : undefined,
        defaultLocation: values['default-location'] ? parseLocations(values['default-location'])[0] : undefined,
        runs: values.runs === undefined ? undefined : Number(values.runs),
        schedule: values.schedule ?? null,
      });
      out.write(
        values.json
          ? `${JSON.stringify(project)}\n`
          : `project ${project.url} added for ${args[0]}: locations ${project.locations.join(', ')}, ${project.runs} run(s)\n`,
      );
    },
  },
  'remove-project': {
    args: 2,
    run: async ({ admin, args, out }) => {
      await admin.removeProject(args[0]!, args[1]!);
      out.write(`project ${args[1]} of ${args[0]} removed with its snapshots\n`);
    },
  },
  'set-budgets': {
    args: 2,
    run: async ({ admin, args, values, out }) => {
      const limits = (texts: string[]) => Object.fromEntries(texts.map((text) => parseLimit(text)));
      const project = await admin.setBudgets(args[0]!, args[1]!, {
        budgets: limits(values.budget),
        maxRegression: limits(values['max-regression']),
      });
      const shown = [
        ...Object.entries(project.budgets.budgets).map(([k, v]) => `${k}=${v}`),
        ...Object.entries(project.budgets.maxRegression).map(([k, v]) => `regression ${k}=${v}`),
      ];
      out.write(
        values.json
          ? `${JSON.stringify({ url: project.url, ...project.budgets })}\n`
          : `budgets of ${project.url}: ${shown.length > 0 ? shown.join(', ') : 'none'}\n`,
      );
    },
  },
  'add-webhook': {
    args: 2,
    run: async ({ admin, args, values, out }) => {
      const format = values.format ?? 'json';
      if (format !== 'json' && format !== 'slack') throw new AdminError(`--format is json or slack, not ${format}`);
      const hook = await admin.addWebhook(args[0]!, args[1]!, {
        ...(values.project ? { project: values.project } : {}),
        format,
      });
      // The secret last, alone after the final space: scripts take the last word.
      out.write(
        `webhook ${hook.id} of ${args[0]} posts ${hook.projectUrl ? `${hook.projectUrl}'s` : "all projects'"} events (${format}) to ${hook.targetUrl}\nsigning secret (shown once, keep it secret): ${hook.secret}\n`,
      );
    },
  },
  'remove-webhook': {
    args: 2,
    run: async ({ admin, args, out }) => {
      await admin.removeWebhook(args[0]!, args[1]!);
      out.write(`webhook ${args[1]} of ${args[0]} removed\n`);
    },
  },
  'webhook-deliveries': {
    args: 1,
    run: async ({ admin, args, values, out }) => {
      const hooks = await admin.webhooks(args[0]!);
      if (values.json) return void out.write(`${JSON.stringify(hooks)}\n`);
      if (hooks.length === 0) out.write(`${args[0]} has no webhooks\n`);
      for (const hook of hooks) {
        out.write(`${hook.id}  ${hook.targetUrl}  [${hook.format}${hook.project ? `, ${hook.project}` : ''}]\n`);
        if (hook.deliveries.length === 0) out.write('  no deliveries\n');
        for (const d of hook.deliveries)
          out.write(
            `  ${d.createdAt}  ${d.event.padEnd(16)} ${d.status.padEnd(9)} attempts=${d.attempts}${d.nextAttemptAt ? ` next=${d.nextAttemptAt}` : ''}${d.lastError ? `  last error: ${d.lastError}` : ''}  id=${d.id}\n`,
          );
      }
    },
  },
  'set-auth': {
    args: 2,
    run: async ({ admin, args, values, out }) => {
      const auth = await authOf(values);
      const project = await admin.setAuth(args[0]!, args[1]!, auth);
      out.write(`credentials of ${project.url} stored, sealed: ${describeAuth(auth)}\n`);
    },
  },
  'clear-auth': {
    args: 2,
    run: async ({ admin, args, out }) => {
      await admin.clearAuth(args[0]!, args[1]!);
      out.write(`credentials of ${args[1]} forgotten\n`);
    },
  },
  'rotate-secrets-key': {
    args: 0,
    run: async ({ admin, out }) => {
      const { resealed, current, unreadable, webhookSecrets, unreadableWebhooks } = await admin.rotateSecretsKey();
      out.write(
        `resealed the credentials of ${resealed} project(s); ${current} already under the current key; sealed ${webhookSecrets} webhook secret(s)\n`,
      );
      if (unreadable.length === 0 && unreadableWebhooks.length === 0) return;
      for (const { user, url, reason } of unreadable)
        out.write(`could not reseal the credentials of ${url} (user ${user}): ${reason}\n`);
      for (const { user, id, reason } of unreadableWebhooks)
        out.write(`could not seal the secret of webhook ${id} (user ${user}): ${reason}\n`);
      throw new AdminError(
        `${unreadable.length} project(s) and ${unreadableWebhooks.length} webhook(s) kept secrets it could not open (listed above): set them again (set-auth; a webhook removed and added), or give the key they were sealed under as PERFWATCH_SECRETS_KEY_PREVIOUS`,
      );
    },
  },
  'recompute-kpis': {
    args: 0,
    run: async ({ store, out }) => {
      const count = await recomputeKpis(store);
      out.write(`KPI records of ${count} snapshot(s) rebuilt to version ${LIGHTHOUSE_KPI_VERSION}\n`);
    },
  },
  list: {
    args: 0,
    run: async ({ admin, values, out }) => {
      const listing = await admin.list();
      const now = new Date();
      if (values.json) {
        return void out.write(
          `${JSON.stringify(
            listing.map(({ user, projects, tokens }) => ({
              user: user.name,
              projects: projects.map(({ url, locations, defaultLocation, runs, schedule }) => ({
                url,
                locations,
                defaultLocation,
                runs,
                schedule,
              })),
              tokens: tokens.map(({ prefix, createdAt, expiresAt, revokedAt }) => ({
                prefix,
                createdAt: createdAt.toISOString(),
                expiresAt: expiresAt?.toISOString() ?? null,
                revokedAt: revokedAt?.toISOString() ?? null,
                expired: hasExpired({ expiresAt }, now),
              })),
            })),
          )}\n`,
        );
      }
      for (const { user, projects, tokens } of listing) {
        out.write(`${user.name}\n`);
        for (const p of projects) out.write(`  ${p.url}  [${p.locations.join(', ')}] runs=${p.runs}\n`);
        for (const t of tokens) {
          const state = t.revokedAt
            ? `revoked ${t.revokedAt.toISOString()}`
            : hasExpired(t, now)
              ? `expired ${t.expiresAt!.toISOString()}`
              : expiryText(t.expiresAt);
          out.write(`  token ${t.prefix}  created ${t.createdAt.toISOString()}  ${state}\n`);
        }
      }
    },
  },
};

async function readJson(file: string, what: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (error) {
    throw new AdminError(`${what} ${file}: ${(error as Error).message}`);
  }
}

/** The credentials `set-auth` was given: a file's, then the cookies, headers and login script named on the command line. */
async function authOf(values: Values): Promise<PageAuth> {
  const fromFile = values['auth-file']
    ? ((await readJson(values['auth-file'], '--auth-file')) as {
        cookies?: unknown[];
        headers?: Record<string, unknown>;
        login?: unknown[];
      })
    : {};
  const cookies = [
    ...(fromFile.cookies ?? []),
    ...values.cookie.map((text) => {
      const at = text.indexOf('=');
      if (at < 1) throw new AdminError('--cookie is NAME=VALUE');
      return { name: text.slice(0, at), value: text.slice(at + 1) };
    }),
  ];
  const headers = {
    ...(fromFile.headers ?? {}),
    ...Object.fromEntries(
      values.header.map((text) => {
        const at = text.indexOf(':');
        if (at < 1) throw new AdminError("--header is 'Name: value'");
        return [text.slice(0, at).trim(), text.slice(at + 1).trim()];
      }),
    ),
  };
  const login = values['login-script'] ? await readJson(values['login-script'], '--login-script') : fromFile.login;
  return {
    ...(cookies.length > 0 ? { cookies } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(login !== undefined ? { login } : {}),
  } as PageAuth;
}

/** `perfwatch admin …`. Returns the exit code; writes results to `out`, problems to `err`. */
export async function main(
  argv: string[],
  env: Readonly<Record<string, string | undefined>>,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    err.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  const [name, ...args] = parsed.positionals;
  if (parsed.values.help || !name) {
    (parsed.values.help ? out : err).write(`${USAGE}\n`);
    return parsed.values.help ? 0 : 2;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name]! : undefined;
  if (!command) {
    err.write(`unknown command ${name}\n${USAGE}\n`);
    return 2;
  }
  const config = parseEnv(adminSettings.schema, env);
  // The store perfwatch start uses (the embedded one may be open in a running start too:
  // SQLite lets a second process write between its transactions).
  const { store } = storeFromEnv(config);
  try {
    await store.init();
    const admin = createAdmin(store, {
      targetGuard: createWebhookTargets(config.PERFWATCH_ALLOW_TARGETS),
      secrets: createSecretBox({ key: config.PERFWATCH_SECRETS_KEY, previous: config.PERFWATCH_SECRETS_KEY_PREVIOUS }),
      maxWebhooksPerUser: config.WEBHOOK_MAX_PER_USER,
    });
    if (args.length !== command.args) throw new AdminError(`${name} takes ${command.args} argument(s)\n${USAGE}`);
    await command.run({ admin, store, args, values: parsed.values, out });
    return 0;
  } catch (error) {
    if (error instanceof AdminError || error instanceof BudgetSpecError || error instanceof SecretKeyError) {
      err.write(`perfwatch admin: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await store.close();
  }
}
