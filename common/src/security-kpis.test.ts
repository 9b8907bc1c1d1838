import { describe, expect, it } from 'vitest';
import { SECURITY_HEADERS, securityKpis } from './security-kpis.ts';

describe('SECURITY KPIs', () => {
  it('grades by how many of the six headers are set', () => {
    const grade = (n: number) =>
      (
        securityKpis({
          https: true,
          tlsProtocol: 'TLSv1.3',
          certDaysLeft: 80,
          certValid: true,
          headers: SECURITY_HEADERS.slice(0, n),
        })[0]!.data as { grade: string }
      ).grade;
    expect([6, 5, 4, 3, 2, 1, 0].map(grade)).toEqual(['A+', 'A', 'B', 'C', 'D', 'F', 'F']);
  });

  it('lists what is missing and reports the transport', () => {
    const [headers, https] = securityKpis({
      https: false,
      tlsProtocol: null,
      certDaysLeft: null,
      certValid: null,
      headers: ['x-frame-options', 'referrer-policy', 'x-powered-by'],
    });
    expect(headers!.data).toEqual({
      grade: 'D',
      set: '2/6',
      missing: ['strict-transport-security', 'content-security-policy', 'x-content-type-options', 'permissions-policy'],
    });
    expect(https!.data).toEqual({ value: false, tlsProtocol: null, certDaysLeft: null, certValid: null });
  });
});
