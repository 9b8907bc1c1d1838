import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ArtifactState, AuditJob } from '@perfwatch/common';
import { loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { receivedRun, type Dispatcher, type RunOutcome } from '../dispatch/run-outcome.ts';
import type { ArtifactReceiver, ArtifactSource } from '../artifacts/artifact-receiver.ts';
import type { NewSnapshot, ProjectRecord } from '../store/store.ts';
import { createUpdateService } from './update-service.ts';

// The update service asks for each cell's representative run's artifacts (unit test of the
// service's wiring: the receiver is a recorder here; the real transfer is test/integration/artifact-transfer.test.ts).

const project: ProjectRecord = {
  id: 'p1',
  userId: 'org1',
  url: 'http://fixture.test/',
  domain: 'fixture.test',
  locations: ['london'],
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

const success = (job: AuditJob): RunOutcome => ({
  ok: true,
  result: receivedRun({
    jobId: job.jobId,
    agentId: `agent-${job.runIndex}`,
    location: job.location,
    device: job.device,
    runIndex: job.runIndex,
    startedAt: '',
    lighthouseMs: 1,
    lhr: loadLhr(job.device, (job.runIndex + 1) as 1 | 2 | 3),
  }),
});

function serviceWith(answer: (source: ArtifactSource) => ArtifactState) {
  const asked: ArtifactSource[] = [];
  const counted: string[] = [];
  const saved: NewSnapshot[] = [];
  const artifacts: ArtifactReceiver = { receive: async (source) => (asked.push(source), answer(source)) };
  const dispatcher: Dispatcher = { dispatch: async (job) => success(job) };
  const service = createUpdateService({
    dispatcher,
    store: {
      saveSnapshot: async (s) => (saved.push(s), s.date),
      listSnapshots: async () => [],
      findSnapshot: async () => null,
    },
    logger: pino({ level: 'silent' }),
    runTimeoutMs: 1000,
    replyTimeoutMs: 2000,
    artifacts,
    observer: {
      updateDone: () => {},
      runDispatched: () => {},
      runJudged: () => {},
      artifactReceived: (kind, state, bytes) => counted.push(`${kind} ${state} ${bytes}`),
    },
  });
  return { service, asked, counted, saved };
}

describe('update service: artifacts of the representative run', () => {
  it("asks the median run's agent for its requests and trace, keyed by the update, and stores their states", async () => {
    const { service, asked, counted, saved } = serviceWith(({ key }) =>
      key.kind === 'requests' ? { state: 'stored', bytes: 1234 } : { state: 'missing', reason: 'NO_ARTIFACT: gone' },
    );
    const outcome = await service.run({ project, devices: ['desktop'], updateType: 'manual', requestId: 'r' });
    const [cell] = outcome.results;
    const medianAgent = cell!.runs[cell!.median - 1]!.agentId;
    expect(asked.map((a) => a.key.kind).sort()).toEqual(['requests', 'trace']);
    for (const source of asked) {
      expect(source.agentId).toBe(medianAgent);
      // The job the median run answered: its agent keeps the artifacts under that id.
      expect(source.jobId).toBe(`${outcome.updateId}.desktop.london.${medianAgent!.replace('agent-', '')}`);
      expect(source.key).toMatchObject({
        orgId: 'org1',
        projectId: 'p1',
        snapshotId: outcome.updateId,
        device: 'desktop',
        location: 'london',
      });
    }
    expect(saved[0]!.results[0]!.artifacts).toEqual({
      requests: { state: 'stored', bytes: 1234 },
      trace: { state: 'missing', reason: 'NO_ARTIFACT: gone' },
    });
    expect(counted.sort()).toEqual(['requests stored 1234', 'trace missing 0']);
  });
});
