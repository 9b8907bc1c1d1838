/**
 * A real OpenID Provider for the tests, as a process of its own: panva's certified
 * `oidc-provider`, on a loopback port the kernel gives it, with one client, the test's own users
 * and groups, and a login page of its own that checks the password (oidc-provider's documented
 * interaction API; its devInteractions accept any password). Consent is granted without asking
 * for the one client, as a company's identity provider does for an app its admins registered.
 *
 *   OIDC_PROVIDER_CONFIG='{"client":{…},"users":[…]}' node test/support/oidc-provider-process.ts
 *
 * Prints `oidc-provider listening at <issuer>` once it answers; stops on SIGTERM.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { z } from 'zod';

const oidcUserSchema = z.object({
  sub: z.string().min(1),
  email: z.string().min(1),
  name: z.string(),
  password: z.string().min(1),
  groups: z.array(z.string()),
});
export type OidcUser = z.infer<typeof oidcUserSchema>;

const oidcClientSchema = z.object({
  clientId: z.string().min(1),
  clientSecret: z.string().min(1),
  redirectUris: z.array(z.url()).min(1),
  postLogoutRedirectUris: z.array(z.url()).default([]),
});
export type OidcClient = z.input<typeof oidcClientSchema>;

const oidcProviderConfigSchema = z.object({
  client: oidcClientSchema,
  users: z.array(oidcUserSchema).min(1),
});

/** Every scope the client may ask for; `groups` is the claim perfwatch maps to organisations and roles. */
const OIDC_SCOPES = ['openid', 'profile', 'email', 'groups'] as const;

const CLAIMS = { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'], groups: ['groups'] };

function providerConfiguration({ client, users }: z.output<typeof oidcProviderConfigSchema>): Configuration {
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  return {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: client.redirectUris,
        post_logout_redirect_uris: client.postLogoutRedirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    // Keys of this run's own: oidc-provider's development keys are public.
    jwks: { keys: [{ ...signingKey, kid: 'perfwatch-test', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    scopes: [...OIDC_SCOPES],
    claims: CLAIMS,
    // The scope's claims in the ID token too, not only at userinfo: an SSO login reads `groups` there.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    loadExistingGrant: grantAll,
    findAccount: (_ctx, id) => {
      const user = users.find((candidate) => candidate.sub === id);
      if (!user) return undefined;
      const { sub, email, name, groups } = user;
      return { accountId: sub, claims: () => ({ sub, email, email_verified: true, name, groups }) };
    },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = page('Error', `<pre>${html(JSON.stringify(out, null, 2))}</pre>`);
    },
  };
}

/**
 * The one client is first-party: its grant covers every scope asked for, without a consent page,
 * also when a signed-in session asks for more than before (no consent prompt ever comes up).
 */
async function grantAll(ctx: KoaContextWithOIDC) {
  const { provider, client, session, params } = ctx.oidc;
  const grantId = ctx.oidc.result?.['consent']?.grantId ?? session?.grantIdFor(client!.clientId);
  const existing = grantId ? await provider.Grant.find(grantId) : undefined;
  const grant = existing ?? new provider.Grant({ clientId: client!.clientId, accountId: session!.accountId! });
  grant.addOIDCScope(String(params?.['scope'] ?? 'openid'));
  await grant.save();
  return grant;
}

const loginFormSchema = z.object({ login: z.string(), password: z.string() });

/** The login page under /interaction/:uid (GET) and its form's target (POST …/login). */
function interactions(provider: Provider, users: OidcUser[]) {
  return async (req: IncomingMessage, res: ServerResponse, uid: string) => {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new Error('interaction mismatch');
    if (req.method === 'GET') return loginPage(res, uid, 200);
    const form = loginFormSchema.safeParse(Object.fromEntries(new URLSearchParams(await body(req))));
    const user =
      form.success &&
      users.find(
        (u) => (u.email === form.data.login || u.sub === form.data.login) && u.password === form.data.password,
      );
    if (!user) return loginPage(res, uid, 401, 'Wrong email or password.');
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: user.sub } },
      { mergeWithLastSubmission: false },
    );
  };
}

function loginPage(res: ServerResponse, uid: string, status: number, error = '') {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(
    page(
      'Sign in',
      `${error ? `<p role="alert">${html(error)}</p>` : ''}
      <form method="post" action="/interaction/${encodeURIComponent(uid)}/login">
        <label>Email <input name="login" type="text" autocomplete="username" required autofocus></label>
        <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
        <button type="submit">Sign in</button>
      </form>`,
    ),
  );
}

// No favicon: a browser's request for one would be a 404 that an e2e test's page watch counts as an error.
const page = (title: string, content: string) =>
  `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${title} · test OpenID provider</title></head><body><h1>${title}</h1>${content}</body></html>`;

const html = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 10_000) throw new Error('form too large');
  }
  return text;
}

async function main() {
  const config = oidcProviderConfigSchema.parse(JSON.parse(process.env['OIDC_PROVIDER_CONFIG'] ?? ''));
  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end();
  const server = createServer((req, res) => handle(req, res));
  // Port 0: the kernel's choice, bound at once; the issuer is known only then.
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, providerConfiguration(config));
  const login = interactions(provider, config.users);
  const callback = provider.callback();
  handle = (req, res) => {
    const match = /^\/interaction\/([\w-]+)(?:\/login)?$/.exec(req.url ?? '');
    if (!match) return void callback(req, res);
    login(req, res, match[1]!).catch((error: unknown) => {
      console.error('interaction failed', error);
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`interaction failed: ${(error as Error).message}`);
    });
  };
  provider.on('server_error', (_ctx, error) => console.error('server_error', error));
  process.once('SIGTERM', () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
  console.log(`oidc-provider listening at ${issuer}`);
}

if (import.meta.main) await main();
