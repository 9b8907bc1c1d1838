import { describe, expect, it } from 'vitest';
import { queuedUpdateOf, queuedUpdateSchema } from './update-queue.ts';
import type { UpdateRecord } from '../store/store.ts';

const record = (over: Partial<UpdateRecord>): UpdateRecord => ({
  id: '6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f',
  userId: 'u1',
  projectId: 'p1',
  url: 'https://shop.example/',
  devices: ['mobile'],
  locations: ['london'],
  updateType: 'ci',
  status: 'queued',
  date: null,
  reason: null,
  attempts: 0,
  runs: 1,
  admittedAt: null,
  progress: [],
  missing: [],
  createdAt: new Date(0),
  updatedAt: new Date(0),
  ...over,
});

describe('queuedUpdateOf', () => {
  it("carries the update's revision in its job, and none when it has none", () => {
    const revision = { commit: 'abc1234', pullRequest: 3 };
    const job = queuedUpdateSchema.parse(JSON.parse(JSON.stringify(queuedUpdateOf(record({ revision }), 'sweep'))));
    expect(job.revision).toEqual(revision);
    expect(queuedUpdateOf(record({}), 'sweep')).not.toHaveProperty('revision');
  });

  it('reads a job of an earlier version, which has no revision', () => {
    const { revision: _, ...old } = queuedUpdateOf(record({ revision: { branch: 'main' } }), 'admitted');
    expect(queuedUpdateSchema.parse(old).revision).toBeUndefined();
  });
});
