import { z } from 'zod';
import type { KpiRecord } from './lighthouse-kpis.ts';
import type { LighthouseResult } from './lighthouse-result.ts';
import { extractElementCount } from './run-metrics.ts';

// PAGE_SOURCE and SAVINGS KPI records, taken from the representative run's Lighthouse result.

const networkItem = z.looseObject({
  url: z.string(),
  transferSize: z.number().optional(),
  resourceSize: z.number().optional(),
  resourceType: z.string().optional(),
});
const tableItems = z.looseObject({ items: z.array(z.looseObject({ wastedBytes: z.number().optional() })).optional() });

function networkRequests(lhr: LighthouseResult): Array<z.infer<typeof networkItem>> {
  const parsed = z.looseObject({ items: z.array(networkItem) }).safeParse(lhr.audits['network-requests']?.details);
  return parsed.success ? parsed.data.items : [];
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export function pageSourceKpis(lhr: LighthouseResult): KpiRecord[] {
  const requests = networkRequests(lhr);
  if (requests.length === 0) return [];
  const mainUrl = typeof lhr['mainDocumentUrl'] === 'string' ? lhr['mainDocumentUrl'] : lhr.finalDisplayedUrl;
  const document = requests.find((r) => r.url === mainUrl) ?? requests.find((r) => r.resourceType === 'Document');
  const secure = mainUrl.startsWith('https:');
  return [
    {
      section: 'PAGE_SOURCE',
      kpi: 'dom',
      data: { elementCount: extractElementCount(lhr), htmlBytes: document?.resourceSize ?? null },
    },
    {
      section: 'PAGE_SOURCE',
      kpi: 'requests',
      data: { count: requests.length, transferBytes: Math.round(sum(requests.map((r) => r.transferSize ?? 0))) },
    },
    // Subresources fetched over plain http from an https page.
    {
      section: 'PAGE_SOURCE',
      kpi: 'mixed_content',
      data: { count: secure ? requests.filter((r) => r.url.startsWith('http:')).length : 0 },
    },
  ];
}

/**
 * The load time a failing audit says could be saved: the larger of its LCP and FCP savings (TBT
 * and CLS savings are of another kind and left out); 0 for a passing or unscored audit.
 */
export function loadTimeSavingMs(audit: LighthouseResult['audits'][string] | undefined): number {
  if (!audit || typeof audit.score !== 'number' || audit.score >= 1) return 0;
  return Math.max(audit.metricSavings?.['LCP'] ?? 0, audit.metricSavings?.['FCP'] ?? 0);
}

/**
 * SAVINGS `opportunities`: what the page's failing audits say it could save.
 * - bytes: Σ `details.overallSavingsBytes` of opportunity audits, plus Σ items' `wastedBytes`
 *   of failing `*-insight` audits (Lighthouse 13 reports byte savings of insights per item);
 * - ms: Σ over failing audits of loadTimeSavingMs, the load-time saving each one estimates;
 * - count: failing audits that claim a saving of either kind.
 */
export function savingsKpis(lhr: LighthouseResult): KpiRecord[] {
  let bytes = 0;
  let ms = 0;
  let count = 0;
  for (const [id, audit] of Object.entries(lhr.audits)) {
    if (typeof audit.score !== 'number' || audit.score >= 1) continue;
    const details = z
      .looseObject({ type: z.string().optional(), overallSavingsBytes: z.number().optional() })
      .safeParse(audit.details);
    let auditBytes =
      details.success && details.data.type === 'opportunity' ? (details.data.overallSavingsBytes ?? 0) : 0;
    if (id.endsWith('-insight')) {
      const items = tableItems.safeParse(audit.details);
      if (items.success) auditBytes += sum((items.data.items ?? []).map((i) => i.wastedBytes ?? 0));
    }
    const auditMs = loadTimeSavingMs(audit);
    if (auditBytes > 0 || auditMs > 0) count++;
    bytes += auditBytes;
    ms += auditMs;
  }
  return [{ section: 'SAVINGS', kpi: 'opportunities', data: { bytes: Math.round(bytes), ms: Math.round(ms), count } }];
}
