import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { TargetGuard } from '@perfwatch/common';

/**
 * One GET of `url` the way a browser's first request goes, to the address the target guard
 * checked (names are checked again as resolved; an IP literal never reaches `lookup`, so it is
 * checked here). Redirects are not followed and certificates are not verified: callers read
 * what the server said, and the caller owns the response (resume or destroy it).
 */
export async function guardedGet(
  url: string,
  { guard, timeoutMs }: { guard?: TargetGuard | undefined; timeoutMs: number },
): Promise<IncomingMessage> {
  const target = new URL(url);
  await guard?.resolve(target.hostname);
  const lookup: LookupFunction | undefined = guard
    ? (hostname, options, callback) => {
        guard.resolve(hostname).then(
          ({ address, family }) =>
            options.all ? callback(null, [{ address, family }]) : callback(null, address, family),
          (error: Error) => callback(error as NodeJS.ErrnoException, '', 4),
        );
      }
    : undefined;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const request = (target.protocol === 'https:' ? httpsRequest : httpRequest)(
      target,
      {
        method: 'GET',
        headers: { 'User-Agent': 'perfwatch-agent', Accept: 'text/html' },
        timeout: timeoutMs,
        rejectUnauthorized: false,
        // A connection of its own, closed after: never one left in the process's pool for another request.
        agent: false,
        ...(lookup ? { lookup } : {}),
      },
      resolve,
    );
    request.on('timeout', () => request.destroy(new Error(`no response within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end();
  });
}
