import type { Response } from 'express';

const escape = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/**
 * A sign-in that did not work, told as a page: the browser came here from the provider, not from
 * a script. It offers to try again and the dashboard (its token sign-in).
 */
export function signInFailedPage(res: Response, status: number, reason: string): void {
  res
    .status(status)
    .set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
    .set('Cache-Control', 'no-store')
    .type('html')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in failed · perfwatch</title>` +
        `<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}</style></head>` +
        `<body><h1>Sign-in failed</h1><p role="alert">${escape(reason)}</p>` +
        `<p><a href="/auth/sso/login">Sign in with single sign-on again</a> · <a href="/">perfwatch</a></p></body></html>`,
    );
}
