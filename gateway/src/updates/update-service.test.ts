import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { AuditJob, Location } from '@perfwatch/common';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { CALM_CONDITIONS } from '../../../test/support/new-cells.ts';
import { receivedRun, replyOutcome, type Dispatcher, type RunOutcome } from '../dispatch/run-outcome.ts';
import type { NewSnapshot, ProjectRecord } from '../store/store.ts';
import type { CruxClient, FieldData } from '../snapshots/crux/crux-client.ts';
import { UpdateInterrupted } from './run-measurer.ts';
import { NoResultError } from './no-result.ts';
import { createUpdateService, type UpdateServiceDeps } from './update-service.ts';

const project: ProjectRecord = {
  id: 'p1',
  userId: 'u1',
  url: 'http://fixture.test/',
  domain: 'fixture.test',
  locations: ['london', 'tokyo'],
  defaultLocation: 'london',
  runs: 3,
  schedule: null,
  budgets: { budgets: {}, maxRegression: {} },
  auth: null,
  devices: null,
  crux: null,
  siteId: null,
  flow: null,
  createdAt: new Date(),
};

/** Records saved snapshots; the project has no budgets, so no earlier snapshot is ever read. */
function recordingStore() {
  const saved: NewSnapshot[] = [];
  const store: UpdateServiceDeps['store'] = {
    saveSnapshot: async (s: NewSnapshot) => (saved.push(s), s.date),
    listSnapshots: async () => [],
    findSnapshot: async () => null,
  };
  return { store, saved };
}

function serviceWith(
  answer: (job: AuditJob) => RunOutcome,
  crux?: CruxClient,
  now = () => new Date('2026-05-01T10:00:00.750Z'),
) {
  const jobs: AuditJob[] = [];
  const dispatcher: Dispatcher = { dispatch: async (job) => (jobs.push(job), answer(job)) };
  const { store, saved } = recordingStore();
  const service = createUpdateService({
    dispatcher,
    store,
    logger: pino({ level: 'silent' }),
    runTimeoutMs: 1000,
    replyTimeoutMs: 2000,
    crux,
    now,
    awayBackoffMs: { first: 5, max: 20 },
  });
  return { service, jobs, saved };
}

const success = (job: AuditJob): RunOutcome => ({
  ok: true,
  result: receivedRun({
    jobId: job.jobId,
    agentId: 'a',
    location: job.location,
    device: job.device,
    runIndex: job.runIndex,
    startedAt: '',
    lighthouseMs: 1,
    lhr: loadLhr(job.device, (job.runIndex + 1) as 1 | 2 | 3),
  }),
});
const failure = (code: 'NO_RESPONDERS' | 'TIMEOUT' | 'RUN_TIMEOUT' | 'PAGE_LOAD_FAILED'): RunOutcome => ({
  ok: false,
  error: { code, message: code.toLowerCase() },
});

describe('update service', () => {
  it('sends runs × devices × locations jobs and stores one snapshot at a whole second', async () => {
    const { service, jobs, saved } = serviceWith(success);
    const outcome = await service.run({
      project,
      devices: ['mobile', 'desktop'],
      updateType: 'manual',
      requestId: 'r',
    });
    expect(jobs).toHaveLength(3 * 2 * 2);
    expect(new Set(jobs.map((j) => j.jobId)).size).toBe(jobs.length);
    expect(saved).toHaveLength(1);
    expect(saved[0]!.date.toISOString()).toBe('2026-05-01T10:00:00.000Z');
    expect(outcome.results.map((r) => `${r.device}/${r.location}`).sort()).toEqual([
      'desktop/london',
      'desktop/tokyo',
      'mobile/london',
      'mobile/tokyo',
    ]);
    for (const r of outcome.results) {
      expect(r.runs).toHaveLength(3);
      expect(r.median).toBeGreaterThanOrEqual(1);
      // The stored result is the representative run's own.
      expect((await r.lighthouse.read()).audits['first-contentful-paint']!.numericValue).toBe(
        r.runs[r.median - 1]!.fcp,
      );
    }
  });

  it('returns a partial result with only the locations that succeeded, naming the missing one and why', async () => {
    const { service, saved, jobs } = serviceWith((job) =>
      job.location === 'tokyo' ? failure('NO_RESPONDERS') : success(job),
    );
    const outcome = await service.run({ project, devices: ['mobile'], updateType: 'ci', requestId: 'r' });
    expect(outcome.results.map((r) => r.location)).toEqual(['london']);
    expect(outcome.missing).toEqual([{ device: 'mobile', location: 'tokyo', reason: 'NO_RESPONDERS: no_responders' }]);
    expect(saved[0]!.missing).toEqual(outcome.missing);
    expect(saved[0]!.updateType).toBe('ci');
    // Without a deadline (a sync update) each run is offered once.
    expect(jobs.filter((j) => j.location === 'tokyo')).toHaveLength(3);
  });

  it('with a deadline, offers the runs of a location that is away again until its agent is back', async () => {
    let tokyoBackAfter = 4;
    const { service, jobs, saved } = serviceWith((job) =>
      job.location === 'tokyo' && tokyoBackAfter-- > 0
        ? failure(tokyoBackAfter % 2 ? 'NO_RESPONDERS' : 'TIMEOUT')
        : success(job),
    );
    const outcome = await service.run(
      {
        project,
        devices: ['mobile'],
        updateType: 'scheduled',
        requestId: 'r',
        deadline: new Date(Date.now() + 60_000),
      },
      'u',
      'async',
    );
    expect(outcome.results.map((r) => r.location).sort()).toEqual(['london', 'tokyo']);
    expect(outcome.missing).toEqual([]);
    expect(saved[0]!.results.find((r) => r.location === 'tokyo')!.runs).toHaveLength(3);
    expect(jobs.filter((j) => /\.again\d+$/.test(j.jobId)).length).toBe(4);
    expect(new Set(jobs.map((j) => j.jobId)).size).toBe(jobs.length);
  });

  it('a gateway stopping ends the wait for an absent location: the update is interrupted, not stored', async () => {
    const { service, saved } = serviceWith((job) =>
      job.location === 'tokyo' ? failure('NO_RESPONDERS') : success(job),
    );
    const stop = new AbortController();
    const running = service.run(
      {
        project,
        devices: ['mobile'],
        updateType: 'scheduled',
        requestId: 'r',
        deadline: new Date(Date.now() + 60_000),
        signal: stop.signal,
      },
      'u',
      'async',
    );
    setTimeout(() => stop.abort(), 50);
    await expect(running).rejects.toBeInstanceOf(UpdateInterrupted);
    expect(saved).toHaveLength(0);
  });

  it('with a deadline, a page that fails to load is not offered again, and a location still away at the deadline is reported missing', async () => {
    let clock = Date.parse('2026-05-01T10:00:00Z');
    const deadline = new Date(clock + 1_000);
    const { service, jobs } = serviceWith(
      (job) => {
        if (job.location === 'tokyo') {
          clock += 300; // each offer of tokyo takes 300 ms of the deadline
          return failure('NO_RESPONDERS');
        }
        return failure('PAGE_LOAD_FAILED');
      },
      undefined,
      () => new Date(clock),
    );
    const error = (await service
      .run({ project, devices: ['desktop'], updateType: 'scheduled', requestId: 'r', deadline }, 'u', 'async')
      .catch((e: unknown) => e)) as NoResultError;
    expect(error.kind).toBe('FAILED');
    expect(jobs.filter((j) => j.location === 'london')).toHaveLength(3);
    const tokyoOffers = jobs.filter((j) => j.location === 'tokyo').length;
    expect(tokyoOffers).toBeGreaterThan(3);
    expect(tokyoOffers).toBeLessThan(3 * 6);
  });

  it('keeps the median among the runs that succeeded', async () => {
    const { service } = serviceWith((job) => (job.runIndex === 1 ? failure('TIMEOUT') : success(job)));
    const outcome = await service.run({
      project: { ...project, locations: ['london'] },
      devices: ['mobile'],
      updateType: 'manual',
      requestId: 'r',
    });
    expect(outcome.results[0]!.runs).toHaveLength(2);
    expect([1, 2]).toContain(outcome.results[0]!.median);
  });

  it.each([
    ['NO_RESPONDERS', 'NO_AGENT', false],
    ['TIMEOUT', 'TIMED_OUT', false],
    ['RUN_TIMEOUT', 'TIMED_OUT', false],
    ['PAGE_LOAD_FAILED', 'FAILED', true],
  ] as const)('stores nothing and fails with %s → %s when no run succeeds', async (code, kind, repeats) => {
    const { service, saved } = serviceWith(() => failure(code));
    const error = await service
      .run({ project, devices: ['desktop'], updateType: 'manual', requestId: 'r' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoResultError);
    expect((error as NoResultError).kind).toBe(kind);
    // Whether a queued update is worth delivering again.
    expect((error as NoResultError).repeats).toBe(repeats);
    expect((error as NoResultError).reasons.join(' ')).toMatch(/desktop\/(london|tokyo)/);
    expect(saved).toHaveLength(0);
  });

  it('reports a mix of failures as 502, naming each location', async () => {
    const byLocation: Record<Location, RunOutcome> = {
      london: failure('NO_RESPONDERS'),
      tokyo: failure('TIMEOUT'),
    } as Record<Location, RunOutcome>;
    const { service } = serviceWith((job) => byLocation[job.location]);
    const error = (await service
      .run({ project, devices: ['mobile'], updateType: 'manual', requestId: 'r' })
      .catch((e: unknown) => e)) as NoResultError;
    expect(error.kind).toBe('FAILED');
    expect(error.repeats).toBe(false);
    expect(error.reasons).toHaveLength(2);
  });

  it('adds CrUX field data and the CRUX assessments once per device, and invents none without it', async () => {
    const record = (lcp: number) => ({
      key: { formFactor: 'PHONE' },
      metrics: {
        largest_contentful_paint: { percentiles: { p75: lcp } },
        cumulative_layout_shift: { percentiles: { p75: '0.01' } },
      },
    });
    const asked: string[] = [];
    const crux: CruxClient = {
      fieldData: async (url, device): Promise<FieldData | null> => {
        asked.push(`${device} ${url}`);
        return device === 'mobile' ? { url: record(1200), origin: record(4100) } : null;
      },
    };
    const { service } = serviceWith(success, crux);
    const outcome = await service.run({
      project,
      devices: ['mobile', 'desktop'],
      updateType: 'manual',
      requestId: 'r',
    });
    expect(asked.sort()).toEqual(['desktop http://fixture.test/', 'mobile http://fixture.test/']);
    for (const r of outcome.results) {
      const cruxKpis = r.kpis.filter((k) => k.section === 'CRUX');
      if (r.device === 'mobile') {
        expect(r.crux.url!.metrics['largest_contentful_paint']).toBeDefined();
        expect(r.crux.origin).toBeDefined();
        // The seed's assessments, then (KPI version 2) each field metric's p75 as a string.
        expect(cruxKpis.slice(0, 2)).toEqual([
          { section: 'CRUX', kpi: 'url', data: 'PASSED' },
          { section: 'CRUX', kpi: 'origin', data: 'FAILED' },
        ]);
        const p75 = Object.fromEntries(cruxKpis.slice(2).map((k) => [k.kpi, k.data]));
        expect(p75).toEqual({
          url_lcp_p75: '1200',
          url_inp_p75: 'NO_DATA',
          url_cls_p75: '0.01',
          url_fcp_p75: 'NO_DATA',
          url_ttfb_p75: 'NO_DATA',
          origin_lcp_p75: '4100',
          origin_inp_p75: 'NO_DATA',
          origin_cls_p75: '0.01',
          origin_fcp_p75: 'NO_DATA',
          origin_ttfb_p75: 'NO_DATA',
        });
      } else {
        expect(r.crux).toEqual({ url: null });
        expect(cruxKpis).toEqual([]);
      }
    }
  });

  it('asks CrUX nothing for a project that opted out of field data', async () => {
    const asked: string[] = [];
    const crux: CruxClient = {
      fieldData: async (url) => {
        asked.push(url);
        return null;
      },
    };
    const { service } = serviceWith(success, crux);
    const outcome = await service.run({
      project: { ...project, crux: false },
      devices: ['mobile'],
      updateType: 'manual',
      requestId: 'r',
    });
    expect(asked).toEqual([]);
    expect(outcome.results.every((r) => r.kpis.every((k) => k.section !== 'CRUX'))).toBe(true);
  });

  it('retries a run once after a retryable agent failure, and not after a page that failed to load', async () => {
    const attempts = new Map<string, number>();
    const { service, jobs } = serviceWith((job) => {
      const key = job.jobId.replace(/\.retry$/, '');
      attempts.set(key, (attempts.get(key) ?? 0) + 1);
      if (job.location === 'london' && job.runIndex === 0 && !job.jobId.endsWith('.retry'))
        return { ok: false, error: { code: 'BROWSER_FAILED', message: 'Chrome crashed' } };
      if (job.location === 'tokyo') return failure('PAGE_LOAD_FAILED');
      return success(job);
    });
    const outcome = await service.run({ project, devices: ['mobile'], updateType: 'manual', requestId: 'r' });
    expect(outcome.results.find((r) => r.location === 'london')!.runs).toHaveLength(3);
    expect(outcome.results.find((r) => r.location === 'tokyo')).toBeUndefined();
    expect(jobs.filter((j) => j.jobId.endsWith('.retry')).map((j) => `${j.location}.${j.runIndex}`)).toEqual([
      'london.0',
    ]);
    expect([...attempts.values()].every((n) => n <= 2)).toBe(true);
  });
  it('tries a run once more after a failure code this gateway does not know (an agent of a later version)', async () => {
    const codes: string[] = [];
    const jobs: AuditJob[] = [];
    const dispatcher: Dispatcher = {
      dispatch: async (job) => {
        jobs.push(job);
        return job.location === 'london' && job.runIndex === 0 && !job.jobId.endsWith('.retry')
          ? replyOutcome({
              ok: false,
              agentId: 'a9',
              error: { code: 'NEW_IN_V1_9', message: 'later', retryable: false },
            })
          : success(job);
      },
    };
    const observer = {
      updateDone: () => {},
      runJudged: () => {},
      runDispatched: (_location: Location, _device: unknown, code: string) => void codes.push(code),
    };
    const service = createUpdateService({
      dispatcher,
      store: recordingStore().store,
      logger: pino({ level: 'silent' }),
      runTimeoutMs: 1000,
      replyTimeoutMs: 2000,
      observer,
    });
    const outcome = await service.run({ project, devices: ['mobile'], updateType: 'manual', requestId: 'r' });
    expect(jobs.filter((j) => j.jobId.endsWith('.retry')).map((j) => `${j.location}.${j.runIndex}`)).toEqual([
      'london.0',
    ]);
    expect(outcome.results.find((r) => r.location === 'london')!.runs).toHaveLength(3);
    // Metrics are labelled with this gateway's codes only.
    expect(codes).toContain('INTERNAL');
    expect(codes).not.toContain('NEW_IN_V1_9');
  });

  it('measures suspect runs again, at most twice per device and location, on another agent, and takes the median over reliable runs', async () => {
    const conditions = { ...CALM_CONDITIONS, overlappingRuns: 0 };
    const options: Array<{ jobId: string; avoidAgent?: string }> = [];
    // The first round's three runs shared agent a1; re-tests go to a2, alone, except in tokyo, where every run is shared.
    const dispatcher: Dispatcher = {
      dispatch: async (job, { avoidAgent }) => {
        options.push({ jobId: job.jobId, ...(avoidAgent ? { avoidAgent } : {}) });
        const retest = job.runIndex >= project.runs;
        const shared = job.location === 'tokyo' || !retest;
        return {
          ok: true,
          result: receivedRun({
            jobId: job.jobId,
            agentId: retest ? 'a2' : 'a1',
            location: job.location,
            device: job.device,
            runIndex: job.runIndex,
            startedAt: '',
            lighthouseMs: 1,
            lhr: loadLhr(job.device, ((job.runIndex % 3) + 1) as 1 | 2 | 3),
            conditions: { ...conditions, concurrentRuns: shared ? 2 : 0, overlappingRuns: shared ? 2 : 0 },
          }),
        };
      },
    };
    const { store, saved } = recordingStore();
    const judged: string[] = [];
    const progress: string[] = [];
    const observer = {
      updateDone() {},
      runDispatched() {},
      runJudged: (location: Location, _device: unknown, verdict: string) => judged.push(`${location} ${verdict}`),
    };
    const service = createUpdateService({
      dispatcher,
      store,
      logger: pino({ level: 'silent' }),
      runTimeoutMs: 1000,
      replyTimeoutMs: 2000,
      observer,
    });
    await service.run({ project, devices: ['mobile'], updateType: 'manual', requestId: 'r' }, 'u', 'sync', (p) =>
      progress.push(p.map((c) => `${c.location} ${c.done}/${c.total}`).join(', ')),
    );

    const london = saved[0]!.results.find((r) => r.location === 'london')!;
    expect(london.runs.map((r) => [r.verdict, r.retestOf, r.agentId])).toEqual([
      ['suspect', undefined, 'a1'],
      ['suspect', undefined, 'a1'],
      ['suspect', undefined, 'a1'],
      ['reliable', 1, 'a2'],
      ['reliable', 2, 'a2'],
    ]);
    expect(london.runs[0]!.reasons).toEqual(['2 other runs were in progress on agent a1 during this run']);
    // The median of the two reliable re-tests, and the stored result is that run's.
    expect([4, 5]).toContain(london.median);
    expect((await london.lighthouse.read()).audits['first-contentful-paint']!.numericValue).toBe(
      london.runs[london.median - 1]!.fcp,
    );
    // Re-tests are asked to avoid the agent of the run they measure again, and are numbered past the first round.
    expect(options.filter((o) => o.jobId.startsWith('u.mobile.london.')).map((o) => [o.jobId, o.avoidAgent])).toEqual([
      ['u.mobile.london.0', undefined],
      ['u.mobile.london.1', undefined],
      ['u.mobile.london.2', undefined],
      ['u.mobile.london.3', 'a1'],
      ['u.mobile.london.4', 'a1'],
    ]);

    // Where every re-test is suspect too, two are made and no more; the median is then a suspect run.
    const tokyo = saved[0]!.results.find((r) => r.location === 'tokyo')!;
    expect(tokyo.runs).toHaveLength(5);
    expect(tokyo.runs.every((r) => r.verdict === 'suspect')).toBe(true);
    expect(tokyo.runs.map((r) => r.retestOf)).toEqual([undefined, undefined, undefined, 1, 1]);

    expect(judged.filter((j) => j === 'london suspect')).toHaveLength(3);
    expect(judged.filter((j) => j === 'london reliable')).toHaveLength(2);
    expect(judged.filter((j) => j === 'tokyo suspect')).toHaveLength(5);
    // Progress counts the re-tests it adds.
    expect(progress.at(-1)).toBe('london 5/5, tokyo 5/5');
  });
});
