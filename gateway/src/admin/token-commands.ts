import { hasExpired, tokenExpiry, TokenExpiryError } from '../accounts/tokens.ts';
import { adminCommand, type AdminValues } from './admin-command.ts';
import { AdminError, type Admin, type IssuedTokenView, type TokenOptions } from './admin.ts';

/** The expiry `--expires` gives a token issued now (none: it never expires). */
function expiryOf(values: AdminValues): TokenOptions {
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
  summary: readonly string[],
  mint: (admin: Admin, user: string, options: TokenOptions) => Promise<IssuedTokenView>,
  said: (user: string, token: string) => string,
) {
  return adminCommand({
    synopsis: 'NAME [--expires WHEN]',
    summary,
    args: 1,
    run: async ({ admin, args, values, out }) => {
      const { user, token, prefix, expiresAt } = await mint(admin, args[0]!, expiryOf(values));
      out.write(
        values.json
          ? `${JSON.stringify({ user: user.name, token, prefix, expiresAt: expiresAt?.toISOString() ?? null })}\n`
          : `${said(user.name, token)}${expiryText(expiresAt)}\n`,
      );
    },
  });
}

export const createUser = printsToken(
  ['create a user and print its first API token (shown once)'],
  (admin, name, options) => admin.createUser(name, options),
  (user, token) => `user ${user} created\ntoken (shown once, keep it secret): ${token}\n`,
);

export const createToken = printsToken(
  [
    'print a new API token for NAME (shown once); --expires: a duration',
    "(90d, 12h, 2w, 1y) or a date (2027-01-31: that day's start, UTC), after",
    'which the token is refused (without it: until revoked)',
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

export const list = adminCommand({
  synopsis: '[--json]',
  summary: ['users, their projects and their tokens (prefix, expiry, revoked)'],
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
    tokens: tokens.map(({ prefix, createdAt, expiresAt, revokedAt }) => ({
      prefix,
      createdAt: createdAt.toISOString(),
      expiresAt: expiresAt?.toISOString() ?? null,
      revokedAt: revokedAt?.toISOString() ?? null,
      expired: hasExpired({ expiresAt }, now),
    })),
  }));
}

function listingText(listing: Listing, now: Date): string {
  const lines: string[] = [];
  for (const { user, projects, tokens } of listing) {
    lines.push(user.name);
    for (const p of projects) lines.push(`  ${p.url}  [${p.locations.join(', ')}] runs=${p.runs}`);
    for (const t of tokens) {
      const state = t.revokedAt
        ? `revoked ${t.revokedAt.toISOString()}`
        : hasExpired(t, now)
          ? `expired ${t.expiresAt!.toISOString()}`
          : expiryText(t.expiresAt);
      lines.push(`  token ${t.prefix}  created ${t.createdAt.toISOString()}  ${state}`);
    }
  }
  return lines.map((line) => `${line}\n`).join('');
}
