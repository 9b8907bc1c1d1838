import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { SECURITY_HEADERS, type SecurityFacts } from '@perfwatch/common';
import type { TargetGuard } from './target-guard.ts';

const DAY_MS = 86_400_000;

/**
 * Looks at the page's final URL the way a browser's first request does: one GET, headers read,
 * body discarded. Over https it records the TLS protocol and the certificate's remaining days,
 * and whether the chain verified (an invalid certificate is reported, not a reason to fail).
 * Connections go to the address the target guard checked.
 */
export async function probeSecurity(url: string, { guard, timeoutMs = 15_000 }: { guard?: TargetGuard; timeoutMs?: number } = {}): Promise<SecurityFacts> {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  // An IP literal never reaches `lookup`: it is checked here; names are checked again as resolved.
  await guard?.resolve(target.hostname);
  const lookup: LookupFunction | undefined = guard
    ? (hostname, options, callback) => {
        guard.resolve(hostname).then(
          ({ address, family }) => (options.all ? callback(null, [{ address, family }]) : callback(null, address, family)),
          (error: Error) => callback(error as NodeJS.ErrnoException, '', 4),
        );
      }
    : undefined;
  return new Promise<SecurityFacts>((resolve, reject) => {
    const request = (https ? httpsRequest : httpRequest)(
      target,
      { method: 'GET', headers: { 'User-Agent': 'perfwatch-agent', Accept: 'text/html' }, timeout: timeoutMs, rejectUnauthorized: false, ...(lookup ? { lookup } : {}) },
      (res: IncomingMessage) => {
        res.resume();
        const socket = res.socket as TLSSocket;
        const certificate = https ? socket.getPeerCertificate() : null;
        const validTo = certificate?.valid_to ? Date.parse(certificate.valid_to) : NaN;
        resolve({
          https,
          tlsProtocol: https ? socket.getProtocol() : null,
          certDaysLeft: https && Number.isFinite(validTo) ? Math.floor((validTo - Date.now()) / DAY_MS) : null,
          certValid: https ? socket.authorized : null,
          headers: SECURITY_HEADERS.filter((h) => res.headers[h] !== undefined),
        });
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no response within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end();
  });
}
