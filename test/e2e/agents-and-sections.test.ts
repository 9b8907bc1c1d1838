import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { auditResultSchema, medianRunIndex, overviewResponseSchema } from '@perfwatch/common';
import { startFakeCrux } from '../support/fake-crux.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Three agent processes (two in london, one in tokyo) with real Chromium and Lighthouse, a
// gateway with CrUX pointed at a local server speaking the CrUX protocol, and the fixture site:
// runs spread over a location's agents, the median chosen, every section in /v1/overview.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let crux: Awaited<ReturnType<typeof startFakeCrux>>;
let gateway: TestGateway;
const agents: PerfwatchProcess[] = [];
let token: string;
const page = () => `${inject('siteUrl')}index.html`;

beforeAll(async () => {
  nats = await isolatedNats();
  crux = await startFakeCrux();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    cruxEndpoint: crux.endpoint,
    replyTimeoutMs: 170_000,
    runTimeoutMs: 120_000,
  });
  for (const [location, id] of [
    ['london', 'london-a'],
    ['london', 'london-b'],
    ['tokyo', 'tokyo-a'],
  ] as const) {
    agents.push(
      spawnPerfwatch(['agent'], {
        NATS_URL: nats.url,
        PERFWATCH_LOCATION: location,
        PERFWATCH_AGENT_ID: id,
        PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      }),
    );
  }
  await Promise.all(agents.map((agent) => agent.waitFor(/agent serving location/)));
  ({ token } = await gateway.admin.createUser('sections'));
  await gateway.admin.addProject('sections', page(), { locations: ['london', 'tokyo'], runs: 3 });
}, 60_000);

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await gateway?.stop();
  await crux?.close();
  await nats?.dispose();
});

describe('several agents, every section', () => {
  it("spreads runs over a location's agents, picks the median run, and fills every section of the overview", async () => {
    const res = await fetch(`${gateway.url}/v1/update?url=${encodeURIComponent(page())}&device=mobile`, {
      headers: { Authorization: token },
    });
    const body = await res.json();
    expect(res.status, JSON.stringify(body).slice(0, 400)).toBe(200);
    const result = auditResultSchema.parse(body);

    const london = result.mobile!.london!;
    // Three runs, and a re-test of any the gateway doubted (three Chromes share two cores here).
    expect(london.runs.filter((r) => r.retestOf === undefined)).toHaveLength(3);
    expect(london.runs.length).toBeLessThanOrEqual(5);
    expect(new Set(london.runs.map((r) => r.agentId))).toEqual(new Set(['london-a', 'london-b']));
    expect(new Set(result.mobile!.tokyo!.runs.map((r) => r.agentId))).toEqual(new Set(['tokyo-a']));
    // The stored result is the run nearest the median FCP and TTI of the reliable runs (of all, when none is).
    const reliable = london.runs.filter((r) => r.verdict === 'reliable');
    const pool = reliable.length > 0 ? reliable : london.runs;
    expect(london.median).toBe(london.runs.indexOf(pool[medianRunIndex(pool)]!) + 1);
    expect(london.verification).toMatchObject({
      reliableRuns: reliable.length,
      suspectRuns: london.runs.length - reliable.length,
      median: reliable.length > 0 ? 'reliable' : 'suspect',
    });
    const chosen = london.runs[london.median - 1]!;
    const audits = (london.lighthouse as unknown as { audits: Record<string, { numericValue: number }> }).audits;
    expect(audits['first-contentful-paint']!.numericValue).toBe(chosen.fcp);
    expect(audits['interactive']!.numericValue).toBe(chosen.tti);
    // CrUX field data for the page and its origin, with the device's form factor.
    expect(london.lighthouse.crux.url?.key).toMatchObject({ formFactor: 'PHONE', url: page() });
    expect(london.lighthouse.crux.origin?.key).toMatchObject({ formFactor: 'PHONE', origin: new URL(page()).origin });

    const day = london.lighthouse.date.slice(0, 10);
    const overview = await fetch(`${gateway.url}/v1/overview?startDate=${day}&endDate=${day}`, {
      headers: { Authorization: token },
    });
    const records = overviewResponseSchema.parse(await overview.json());
    const sections = new Set(records.map((r) => `${r.section}/${r.kpi}`));
    for (const expected of [
      'LIGHTHOUSE/performance',
      'CRUX/url',
      'CRUX/origin',
      'PAGE_SOURCE/dom',
      'PAGE_SOURCE/requests',
      'PAGE_SOURCE/mixed_content',
      'SECURITY/headers',
      'SECURITY/https',
      'SAVINGS/opportunities',
    ]) {
      expect(sections, expected).toContain(expected);
    }
    const find = (section: string, kpi: string) =>
      records.find((r) => r.section === section && r.kpi === kpi && r.location === 'london')!.data;
    expect(find('CRUX', 'url')).toBe('PASSED');
    // The fixture server sends none of the graded headers, over plain http.
    expect(find('SECURITY', 'headers')).toEqual({
      grade: 'F',
      set: '0/6',
      missing: expect.arrayContaining(['content-security-policy']),
    });
    expect(find('SECURITY', 'https')).toEqual({ value: false, tlsProtocol: null, certDaysLeft: null, certValid: null });
    expect((find('PAGE_SOURCE', 'dom') as { elementCount: number }).elementCount).toBeGreaterThan(400);
  }, 240_000);
});
