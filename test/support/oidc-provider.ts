import { z } from 'zod';
import { measuredWait } from './measured-wait.ts';
import type { OidcClient, OidcUser } from './oidc-provider-process.ts';
import { spawnNode } from './perfwatch-process.ts';

/**
 * The tests' OpenID Provider (test/support/oidc-provider-process.ts: panva's oidc-provider) as a
 * process of its own, with the users and the one client the test gives it. Each test file starts
 * its own and stops it by its pid.
 */

export interface OidcProvider {
  /** e.g. http://127.0.0.1:41234 (no trailing slash): what an SSO setting names. */
  issuer: string;
  /** From spawn to the first answer of the discovery document, in ms. */
  startupMs: number;
  /** How long one request to the provider may take on this machine now. */
  requestTimeoutMs: number;
  /** The provider's stdout and stderr, for a failure's message. */
  output(): string;
  stop(): Promise<void>;
}

export interface OidcProviderOptions {
  users: OidcUser[];
  client: OidcClient;
  /** How long to wait for it to listen, before anything was measured. */
  startTimeoutMs?: number;
}

const discoverySchema = z.object({ issuer: z.string(), authorization_endpoint: z.string() });

export async function startOidcProvider({
  users,
  client,
  startTimeoutMs = 30_000,
}: OidcProviderOptions): Promise<OidcProvider> {
  const started = performance.now();
  const process = spawnNode(['test/support/oidc-provider-process.ts'], {
    OIDC_PROVIDER_CONFIG: JSON.stringify({ users, client }),
  });
  const stop = async () => void (await process.stop());
  try {
    const [, issuer] = await process.waitFor(/oidc-provider listening at (\S+)/, startTimeoutMs);
    // It prints the line once it listens: one request shows it answers, no polling.
    const answer = await fetch(`${issuer}/.well-known/openid-configuration`, {
      signal: AbortSignal.timeout(startTimeoutMs),
    });
    if (!answer.ok) throw new Error(`discovery answered ${answer.status}`);
    const discovery = discoverySchema.parse(await answer.json());
    if (discovery.issuer !== issuer) throw new Error(`discovery names issuer ${discovery.issuer}, not ${issuer}`);
    const startupMs = performance.now() - started;
    const requestTimeoutMs = measuredWait(startupMs, 1, { slack: 3, floorMs: 10_000 });
    return { issuer: issuer!, startupMs, requestTimeoutMs, output: () => process.output(), stop };
  } catch (error) {
    await process.stop('SIGKILL');
    throw new Error(
      `the OpenID provider did not start: ${(error as Error).message}\n${process.output().slice(-2000)}`,
      {
        cause: error,
      },
    );
  }
}

/** Where a sign-in through the provider's login page ended, without a browser. */
export interface FormSignIn {
  /** The last page's status: 401 with the login page again for a wrong password. */
  status: number;
  /** The redirect URI with `code`, `state` and `iss` (or `error`), once the provider sent the browser back. */
  callback?: URL;
  /** The last page's HTML when it did not redirect back. */
  page?: string;
}

/**
 * Does what a browser does with an authorization URL: follows the provider's redirects to its
 * login page, submits its form, and follows on until a redirect names `redirectUri` (not fetched).
 * Cookies are kept by name only: the provider's are distinct per step.
 */
export async function signInWithForm(
  authorizationUrl: URL,
  {
    login,
    password,
    redirectUri,
    timeoutMs,
  }: { login: string; password: string; redirectUri: string; timeoutMs: number },
): Promise<FormSignIn> {
  const cookies = new Map<string, string>();
  const request = async (url: URL, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (cookies.size) headers.set('cookie', [...cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const answer = await fetch(url, { ...init, headers, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    for (const line of answer.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const [name = '', value = ''] = pair.split(/=(.*)/s);
      if (value && !/max-age=0|expires=thu, 01 jan 1970/i.test(line)) cookies.set(name.trim(), value);
      else cookies.delete(name.trim());
    }
    return answer;
  };
  let current = authorizationUrl;
  let answer = await request(current);
  for (let step = 0; step < 10; step++) {
    const location = answer.headers.get('location');
    if (location) {
      current = new URL(location, current);
      if (current.href.startsWith(redirectUri)) return { status: answer.status, callback: current };
      answer = await request(current);
      continue;
    }
    const page = await answer.text();
    const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1];
    if (answer.status !== 200 || !action) return { status: answer.status, page };
    current = new URL(action, current);
    answer = await request(current, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login, password }),
    });
  }
  throw new Error(`no way back to ${redirectUri} after 10 steps from ${authorizationUrl.href}`);
}
