import type { TLSSocket } from 'node:tls';
import { SECURITY_HEADERS, type SecurityFacts, type TargetGuard } from '@perfwatch/common';
import { guardedGet } from './guarded-get.ts';

const DAY_MS = 86_400_000;

/**
 * Looks at the page's final URL the way a browser's first request does: one GET, headers read,
 * body discarded. Over https it records the TLS protocol and the certificate's remaining days,
 * and whether the chain verified (an invalid certificate is reported, not a reason to fail).
 * Connections go to the address the target guard checked.
 */
export async function probeSecurity(
  url: string,
  { guard, timeoutMs = 15_000 }: { guard?: TargetGuard; timeoutMs?: number } = {},
): Promise<SecurityFacts> {
  const https = new URL(url).protocol === 'https:';
  const res = await guardedGet(url, { guard, timeoutMs });
  res.resume();
  const socket = res.socket as TLSSocket;
  const certificate = https ? socket.getPeerCertificate() : null;
  const validTo = certificate?.valid_to ? Date.parse(certificate.valid_to) : NaN;
  return {
    https,
    tlsProtocol: https ? socket.getProtocol() : null,
    certDaysLeft: https && Number.isFinite(validTo) ? Math.floor((validTo - Date.now()) / DAY_MS) : null,
    certValid: https ? socket.authorized : null,
    headers: SECURITY_HEADERS.filter((h) => res.headers[h] !== undefined),
  };
}
