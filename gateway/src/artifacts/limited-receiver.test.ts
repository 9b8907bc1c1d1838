import { describe, expect, it } from 'vitest';
import type { ArtifactState } from '@perfwatch/common';
import type { ArtifactSource } from './artifact-receiver.ts';
import { limitedReceiver } from './limited-receiver.ts';

const source = (jobId: string): ArtifactSource => ({
  location: 'london',
  agentId: 'a1',
  jobId,
  key: { orgId: 'o', projectId: 'p', snapshotId: 's', device: 'mobile', location: 'london', kind: 'trace' },
});

describe('limited receiver', () => {
  it('lets `atOnce` transfers run and starts the next only when one ends, every one answered', async () => {
    let running = 0;
    let most = 0;
    const started: string[] = [];
    const ends = new Map<string, () => void>();
    const receiver = limitedReceiver(
      {
        receive: ({ jobId }) => {
          started.push(jobId);
          running += 1;
          most = Math.max(most, running);
          return new Promise<ArtifactState>((resolve) =>
            ends.set(jobId, () => {
              running -= 1;
              resolve({ state: 'stored', bytes: jobId.length });
            }),
          );
        },
      },
      2,
    );
    const answers = ['j1', 'j2', 'j3', 'j4'].map((id) => receiver.receive(source(id)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['j1', 'j2']);
    ends.get('j2')!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['j1', 'j2', 'j3']);
    ends.get('j1')!();
    await new Promise((resolve) => setImmediate(resolve));
    ends.get('j3')!();
    await new Promise((resolve) => setImmediate(resolve));
    ends.get('j4')!();
    expect(await Promise.all(answers)).toHaveLength(4);
    expect(most).toBe(2);
  });
});
