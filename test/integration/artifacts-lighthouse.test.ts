import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { createGunzip } from 'node:zlib';
import { connect } from '@nats-io/transport-node';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { chromeFlags, createLighthouseRunner, startAgent, startGuardProxy } from '@perfwatch/agent';
import { auditSubject, createTargetGuard, decodeReply, encodeJob, HEADERS, parseAllowList } from '@perfwatch/common';
import { createArtifactReceiver } from '../../gateway/src/artifacts/artifact-receiver.ts';
import { createFsArtifactStore } from '../../gateway/src/artifacts/store/fs-artifact-store.ts';
import type { ArtifactKey } from '../../gateway/src/artifacts/store/artifact-store.ts';
import { natsWithClient, silentLogger } from '../support/test-services.ts';

// The heavy page of the fixture site measured by a real agent (real Chromium and Lighthouse)
// over a real nats-server; the gateway's receiver pulls the run's artifacts into the fs store.
const stack = await natsWithClient();
const dir = await mkdtemp(join(tmpdir(), 'perfwatch-artifacts-lh-'));
const guard = createTargetGuard({ allow: parseAllowList('127.0.0.1/32') });
const proxy = await startGuardProxy({ guard, logger: silentLogger });
const runner = createLighthouseRunner({
  chromePath: process.env['CHROME_PATH'] ?? '/usr/bin/chromium',
  chromeFlags: chromeFlags({ noSandbox: process.getuid?.() === 0 }),
  logger: silentLogger,
  runsPerBrowser: 1,
  guard: { guard, proxy },
});
const agentNc = await connect({ servers: stack.nats.url });
const agent = startAgent({ nc: agentNc, location: 'frankfurt', runner, logger: silentLogger, agentId: 'fra.lh-1' });
afterAll(async () => {
  await agent.stop();
  await agentNc.drain();
  await runner.close();
  await proxy.close();
  await stack.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe("the median run's artifacts with real Lighthouse", () => {
  it("the heavy page's requests and trace reach the gateway's store, the requests as the run saw them", async () => {
    await agentNc.flush();
    const job = {
      jobId: 'heavy-1',
      updateId: 'u',
      url: `${inject('siteUrl')}heavy.html`,
      device: 'desktop' as const,
      location: 'frankfurt' as const,
      runIndex: 0,
      timeoutMs: 120_000,
    };
    const msg = await stack.client.request(auditSubject('frankfurt'), encodeJob(job), { timeout: 150_000 });
    const reply = await decodeReply(msg.data, msg.headers?.get(HEADERS.contentEncoding));
    if (!reply.ok) throw new Error(JSON.stringify(reply.error));
    const store = createFsArtifactStore({ dir });
    const receiver = createArtifactReceiver({ nc: stack.client, store, logger: silentLogger });
    const key = (kind: ArtifactKey['kind']): ArtifactKey => ({
      orgId: 'org',
      projectId: 'heavy',
      snapshotId: 's1',
      device: 'desktop',
      location: 'frankfurt',
      kind,
    });
    const source = { location: 'frankfurt' as const, agentId: reply.result.agentId, jobId: job.jobId };
    const requests = await receiver.receive({ ...source, key: key('requests') });
    const trace = await receiver.receive({ ...source, key: key('trace') });
    expect(requests).toMatchObject({ state: 'stored' });
    expect(trace).toMatchObject({ state: 'stored' });

    const lines = (await text((await store.get(key('requests')))!.body.pipe(createGunzip()))).trimEnd().split('\n');
    const end = JSON.parse(lines.pop()!) as { requests: number; truncated: boolean };
    const items = (reply.result.lhr.audits['network-requests']!.details as { items: Array<{ url: string }> }).items;
    expect(end).toMatchObject({ requests: items.length, truncated: false });
    expect(lines.map((line) => (JSON.parse(line) as { url: string }).url)).toEqual(items.map((item) => item.url));
    // The page, its stylesheet and what the browser asks for beside them (favicon).
    expect(lines.map((line) => new URL((JSON.parse(line) as { url: string }).url).pathname)).toEqual(
      expect.arrayContaining(['/heavy.html', '/assets/site.css']),
    );
    const events = JSON.parse(await text((await store.get(key('trace')))!.body.pipe(createGunzip()))) as {
      traceEvents: Array<{ name?: string }>;
    };
    expect(events.traceEvents.some((event) => event.name === 'ResourceSendRequest')).toBe(true);
  }, 180_000);
});
