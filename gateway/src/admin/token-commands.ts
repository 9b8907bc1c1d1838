import { hasExpired, tokenExpiry, TokenExpiryError } from '../accounts/tokens.ts';
import { adminCommand, type AdminValues } from './admin-command.ts';
import { TOKEN_SCOPES, type TokenScope } from '@perfwatch/common';
import type { TokenRecord } from '../accounts/store/accounts-store.ts';
import { AdminError, type Admin, type IssuedTokenView, type TokenOptions } from './admin.ts';

/** The expiry `--expires` gives a token issued now (none: it never expires). */
function expiryOf(values: AdminValues): Pick<TokenOptions, 'expiresAt'> {
  if (values.expires === undefined) return {};
  try {
    return { expiresAt: tokenExpiry(values.expires, new Date()) };
  } catch (error) {
    if (error instanceof TokenExpiryError) throw new AdminError(error.message);
    throw error;
  }
}

/** What `--org`, `--scope`, `--projects`, `--label` and `--expires` ask of a token. */
function tokenOptionsOf(values: AdminValues): TokenOptions {
  const scope = values.scope;
  if (scope !== undefined && !isScope(scope))
    throw new AdminError(`--scope is ${TOKEN_SCOPES.join(', ')}; not ${JSON.stringify(scope)}`);
  return {
    ...expiryOf(values),
    ...(values.org === undefined ? {} : { org: values.org }),
    ...(scope === undefined ? {} : { scope }),
    ...(values.projects === undefined ? {} : { projects: listOf(values.projects) }),
    ...(values.label === undefined ? {} : { label: values.label }),
  };
}

const isScope = (text: string): text is TokenScope => (TOKEN_SCOPES as readonly string[]).includes(text);
const listOf = (text: string) =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

/** What a token acts as, shown when it is not what tokens were before organisations (its user's own, admin). */
function grantText({ plain, org, scope, projects, label }: IssuedTokenView): string {
  if (plain) return '';
  const on = projects ? ` for ${projects.join(', ')}` : '';
  return `scope ${scope} in ${org}${on}${label === null ? '' : `, label ${JSON.stringify(label)}`}\n`;
}

/** When a token stops being accepted, as shown beside it. */
const expiryText = (expiresAt: Date | null): string => (expiresAt ? `expires ${expiresAt.toISOString()}` : 'no expiry');

/** A command that mints a token for the user it names and prints it, once (or its JSON), with its expiry. */
function printsToken(
  synopsis: string,
  summary: readonly string[],
  mint: (admin: Admin, user: string, options: TokenOptions) => Promise<IssuedTokenView>,
  said: (user: string, token: string) => string,
) {
  return adminCommand({
    synopsis,
    summary,
    args: 1,
    run: async ({ admin, args, values, out }) => {
      const issued = await mint(admin, args[0]!, tokenOptionsOf(values));
      const { user, token, prefix, expiresAt, org, scope, projects, label } = issued;
      out.write(
        values.json
          ? `${JSON.stringify({ user: user.name, token, prefix, expiresAt: expiresAt?.toISOString() ?? null, org, scope, projects, label })}\n`
          : `${said(user.name, token)}${expiryText(expiresAt)}\n${grantText(issued)}`,
      );
    },
  });
}

export const createUser = printsToken(
  'NAME [--expires WHEN] [--scope S] [--label TEXT]',
  ['create a user, with an organisation of their own (its admin), and print', 'its first API token (shown once)'],
  (admin, name, options) => admin.createUser(name, options),
  (user, token) => `user ${user} created\ntoken (shown once, keep it secret): ${token}\n`,
);

export const createToken = printsToken(
  'NAME [--expires WHEN] [--org ORG] [--scope read|ci|editor|admin] [--projects URL,URL] [--label TEXT]',
  [
    'print a new API token for NAME (shown once); --expires: a duration',
    "(90d, 12h, 2w, 1y) or a date (2027-01-31: that day's start, UTC), after",
    'which the token is refused (without it: until revoked); --org: the',
    "organisation it acts in (NAME a member; default NAME's own); --scope: no",
    "more than NAME's role there (default all of it); --projects: a ci token's,",
    'each a project of the organisation; --label: what it is for',
  ],
  (admin, name, options) => admin.createToken(name, options),
  (user, token) => `token for ${user} (shown once, keep it secret): ${token}\n`,
);

export const revokeToken = adminCommand({
  synopsis: 'PREFIX',
  summary: ['revoke the token whose prefix (first 8 characters after pw_) is PREFIX'],
  args: 1,
  run: async ({ admin, args, out }) => {
    await admin.revokeToken(args[0]!);
    out.write(`token ${args[0]} revoked\n`);
  },
});

type Listing = Awaited<ReturnType<Admin['list']>>;
type ListedToken = Omit<TokenRecord, 'digest'>;

/** Whether a token is revoked, expired, or until when it is accepted. */
export const tokenState = (t: ListedToken, now: Date): string =>
  t.revokedAt
    ? `revoked ${t.revokedAt.toISOString()}`
    : hasExpired(t, now)
      ? `expired ${t.expiresAt!.toISOString()}`
      : expiryText(t.expiresAt);

/** A token's scope, organisation (when known by name), ci projects and label, as a listing line ends. */
export const grantOf = (t: ListedToken & { org?: string }): string =>
  [
    `scope ${t.scope}`,
    ...(t.org === undefined ? [] : [`org ${t.org}`]),
    ...(t.projects ? [`projects ${t.projects.join(',')}`] : []),
    ...(t.label === null ? [] : [`label ${JSON.stringify(t.label)}`]),
  ].join('  ');

/** A token as the JSON listings show it: never its digest. */
export const tokenJson = (now: Date) => (t: ListedToken & { org?: string; user?: string | null }) => ({
  prefix: t.prefix,
  ...(t.user === undefined ? {} : { user: t.user }),
  ...(t.org === undefined ? {} : { org: t.org }),
  scope: t.scope,
  projects: t.projects,
  label: t.label,
  createdAt: t.createdAt.toISOString(),
  expiresAt: t.expiresAt?.toISOString() ?? null,
  revokedAt: t.revokedAt?.toISOString() ?? null,
  expired: hasExpired(t, now),
});

export const list = adminCommand({
  synopsis: '[--json]',
  summary: ['users, their projects and their tokens (prefix, expiry, revoked,', 'scope, organisation, label)'],
  args: 0,
  run: async ({ admin, values, out }) => {
    const listing = await admin.list();
    const now = new Date();
    out.write(values.json ? `${JSON.stringify(listingJson(listing, now))}\n` : listingText(listing, now));
  },
});

function listingJson(listing: Listing, now: Date) {
  return listing.map(({ user, projects, tokens }) => ({
    user: user.name,
    projects: projects.map(({ url, locations, defaultLocation, runs, schedule }) => ({
      url,
      locations,
      defaultLocation,
      runs,
      schedule,
    })),
    tokens: tokens.map(tokenJson(now)),
  }));
}

function listingText(listing: Listing, now: Date): string {
  const lines: string[] = [];
  for (const { user, projects, tokens } of listing) {
    lines.push(user.name);
    for (const p of projects) lines.push(`  ${p.url}  [${p.locations.join(', ')}] runs=${p.runs}`);
    for (const t of tokens)
      lines.push(`  token ${t.prefix}  created ${t.createdAt.toISOString()}  ${tokenState(t, now)}  ${grantOf(t)}`);
  }
  return lines.map((line) => `${line}\n`).join('');
}
