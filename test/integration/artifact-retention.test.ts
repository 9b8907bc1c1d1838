import type { Readable } from 'node:stream';
import { mkdtemp, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ArtifactKey } from '../../gateway/src/artifacts/store/artifact-store.ts';
import { createFsArtifactStore } from '../../gateway/src/artifacts/store/fs-artifact-store.ts';
import { isolatedNats, startTestGateway } from '../support/test-services.ts';

async function* body(text: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(text);
}

// The scheduler of a running gateway applies ARTIFACT_RETENTION_DAYS to the store its settings name.
describe('artifact retention on a running gateway', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifact-retention-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('deletes artifacts written before ARTIFACT_RETENTION_DAYS and keeps the rest', async () => {
    const store = createFsArtifactStore({ dir });
    const old: ArtifactKey = {
      orgId: 'org1',
      projectId: 'project1',
      snapshotId: 'snapshot1',
      device: 'mobile',
      location: 'london',
      kind: 'trace',
    };
    const recent = { ...old, snapshotId: 'snapshot2' };
    const options = { maxBytes: 1024, contentType: 'application/json' };
    await store.put(old, body('{"old":true}'), options);
    await store.put(recent, body('{"recent":true}'), options);
    // Written three days ago, as the fs store reads a write's time (the file's mtime).
    const threeDaysAgo = new Date(Date.now() - 3 * 86_400_000);
    await utimes(join(dir, 'org1', 'project1', 'snapshot1', 'mobile-london-trace'), threeDaysAgo, threeDaysAgo);

    const nats = await isolatedNats();
    const gateway = await startTestGateway({
      natsUrl: nats.url,
      config: { ARTIFACT_DIR: dir, ARTIFACT_RETENTION_DAYS: 2, SCHEDULER_INTERVAL_MS: 200 },
    });
    try {
      await vi.waitFor(async () => expect(await store.get(old)).toBeNull(), { timeout: 20_000 });
      const kept = await store.get(recent);
      expect(kept?.bytes).toBe(15);
      // Its body not read: destroyed, so its file is closed now, not by the collector.
      (kept?.body as Readable | undefined)?.destroy();
    } finally {
      await gateway.runtime.stop();
      await gateway.nc.drain();
      await nats.dispose();
    }
  });
});
