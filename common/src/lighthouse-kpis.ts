import { auditNumber, categoryScore, type LighthouseResult } from './lighthouse-result.ts';

export const SECTIONS = ['lighthouse', 'crux', 'page_source', 'security', 'savings'] as const;
export type Section = (typeof SECTIONS)[number];

export interface KpiRecord {
  section: Uppercase<Section>;
  kpi: string;
  data: Record<string, unknown> | string;
}

export interface PerformanceKpi {
  si: number | null;
  fcp: number | null;
  fmp: number | null;
  tti: number | null;
  fCPUi: number | null;
  mpFID: number | null;
  score: number | null;
  /** Version 2: the lab Core Web Vitals and server response time, beside the seed's fields. */
  lcp: number | null;
  tbt: number | null;
  /** Unitless, to three decimals. */
  cls: number | null;
  ttfb: number | null;
  /** Interaction to Next Paint needs interactions: null for the navigation runs perfwatch makes. */
  inp: number | null;
}

/**
 * Bumped whenever a KPI's definition changes, so stored records can be recognised and
 * recomputed from the kept Lighthouse result (the idea of Lighthouse CI's statistic versions):
 * 1, the seed's fields; 2, `performance` gains lcp, tbt, cls, ttfb and inp.
 */
export const LIGHTHOUSE_KPI_VERSION = 2;

/** Categories the spec names; they are always emitted, null when Lighthouse has no such category. */
const NAMED_CATEGORIES = ['accessibility', 'best-practices', 'seo', 'pwa'] as const;

function snakeCase(id: string): string {
  return id.replace(/-/g, '_');
}

/** Milliseconds, rounded to a tenth: sub-tenth precision is noise between runs. */
function ms(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}

export function performanceKpi(lhr: LighthouseResult): PerformanceKpi {
  return {
    si: ms(auditNumber(lhr, 'speed-index')),
    fcp: ms(auditNumber(lhr, 'first-contentful-paint')),
    // Lighthouse 13 no longer computes first-meaningful-paint or first-cpu-idle; an older
    // result that has them still reports them.
    fmp: ms(auditNumber(lhr, 'first-meaningful-paint')),
    tti: ms(auditNumber(lhr, 'interactive')),
    fCPUi: ms(auditNumber(lhr, 'first-cpu-idle')),
    mpFID: ms(auditNumber(lhr, 'max-potential-fid')),
    score: categoryScore(lhr, 'performance'),
    lcp: ms(auditNumber(lhr, 'largest-contentful-paint')),
    tbt: ms(auditNumber(lhr, 'total-blocking-time')),
    cls: thousandths(auditNumber(lhr, 'cumulative-layout-shift')),
    ttfb: ms(auditNumber(lhr, 'server-response-time')),
    inp: ms(auditNumber(lhr, 'interaction-to-next-paint')),
  };
}

function thousandths(value: number | null): number | null {
  return value === null ? null : Math.round(value * 1000) / 1000;
}

/**
 * `pwa_checks` of the spec: passed/total of the PWA category's optimized and installable
 * groups. Lighthouse 12 removed the PWA category, so on current results both are null.
 */
function pwaChecks(lhr: LighthouseResult): Record<'pwa-optimized' | 'pwa-installable', string | null> {
  const refs = lhr.categories['pwa']?.auditRefs ?? [];
  const ratio = (group: string): string | null => {
    const members = refs.filter((ref) => ref.group === group);
    if (members.length === 0) return null;
    const passed = members.filter((ref) => lhr.audits[ref.id]?.score === 1).length;
    return `${passed}/${members.length}`;
  };
  return { 'pwa-optimized': ratio('pwa-optimized'), 'pwa-installable': ratio('pwa-installable') };
}

/** The LIGHTHOUSE section's KPI records of DESIGN.md, for one run. */
export function lighthouseKpis(lhr: LighthouseResult): KpiRecord[] {
  const records: KpiRecord[] = [{ section: 'LIGHTHOUSE', kpi: 'performance', data: { ...performanceKpi(lhr) } }];
  for (const id of NAMED_CATEGORIES) {
    records.push({ section: 'LIGHTHOUSE', kpi: snakeCase(id), data: { score: categoryScore(lhr, id) } });
  }
  const named = new Set<string>(['performance', ...NAMED_CATEGORIES]);
  for (const id of Object.keys(lhr.categories).sort()) {
    if (!named.has(id))
      records.push({ section: 'LIGHTHOUSE', kpi: snakeCase(id), data: { score: categoryScore(lhr, id) } });
  }
  records.push({ section: 'LIGHTHOUSE', kpi: 'pwa_checks', data: pwaChecks(lhr) });
  return records;
}
