import { z } from 'zod';
import type { KpiRecord } from './lighthouse-kpis.ts';

/** The response headers DESIGN.md grades, in the order `missing` lists them. */
export const SECURITY_HEADERS = [
  'strict-transport-security',
  'content-security-policy',
  'x-frame-options',
  'x-content-type-options',
  'referrer-policy',
  'permissions-policy',
] as const;

/**
 * Bounds of what an agent says of a page's transport. Agents are run by other operators, and
 * `tlsProtocol` is stored in the SECURITY KPI record as sent: what Node names a protocol
 * (`TLSv1.3`, 7 characters) with a wide margin; a certificate's days within year 9999, the
 * last an X.509 date can name; the graded headers are six names of at most 25 characters.
 */
const SECURITY_FACT_BOUNDS = {
  tlsProtocolChars: 64,
  certDaysLeft: 3_000_000,
  headers: 32,
  headerNameChars: 64,
} as const;

/** What an agent observed of a page's transport and headers, sent beside its Lighthouse result. */
export const securityFactsSchema = z.object({
  https: z.boolean(),
  /** e.g. `TLSv1.3`; null over plain http. */
  tlsProtocol: z.string().max(SECURITY_FACT_BOUNDS.tlsProtocolChars).nullable(),
  /** Whole days until the certificate expires (negative once expired); null over plain http. */
  certDaysLeft: z
    .number()
    .int()
    .min(-SECURITY_FACT_BOUNDS.certDaysLeft)
    .max(SECURITY_FACT_BOUNDS.certDaysLeft)
    .nullable(),
  /** Whether the certificate chain verified against the agent's trust store. */
  certValid: z.boolean().nullable(),
  /** Lower-cased names of the graded headers the final response carried. */
  headers: z.array(z.string().max(SECURITY_FACT_BOUNDS.headerNameChars)).max(SECURITY_FACT_BOUNDS.headers),
});
export type SecurityFacts = z.infer<typeof securityFactsSchema>;

const GRADES = ['F', 'F', 'D', 'C', 'B', 'A', 'A+'] as const;

/**
 * SECURITY `headers`: A+ with all six graded headers, A with five, then B, C, D; F with one or
 * none. `https`: whether the page was served over TLS, with protocol and certificate days left.
 */
export function securityKpis(facts: SecurityFacts): KpiRecord[] {
  const present = SECURITY_HEADERS.filter((h) => facts.headers.includes(h));
  const missing = SECURITY_HEADERS.filter((h) => !facts.headers.includes(h));
  return [
    {
      section: 'SECURITY',
      kpi: 'headers',
      data: { grade: GRADES[present.length]!, set: `${present.length}/${SECURITY_HEADERS.length}`, missing },
    },
    {
      section: 'SECURITY',
      kpi: 'https',
      data: {
        value: facts.https,
        tlsProtocol: facts.tlsProtocol,
        certDaysLeft: facts.certDaysLeft,
        certValid: facts.certValid,
      },
    },
  ];
}
