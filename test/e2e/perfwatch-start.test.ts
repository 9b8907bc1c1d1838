import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { auditResultSchema } from '@perfwatch/common';
import { freePort } from '@perfwatch/gateway';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';

const exec = promisify(execFile);

// `perfwatch start` (what `npm start` runs): its own nats-server and database, a gateway and
// an agent in one process, a demo site and project, and a printed curl line that works.
let dataDir: string;
let proc: PerfwatchProcess | undefined;

afterAll(async () => {
  await proc?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('perfwatch start', () => {
  it('prints a token and a curl line that returns a real Lighthouse result of the demo page', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'perfwatch-start-'));
    const [port, demoPort] = [await freePort(), await freePort()];
    proc = spawnPerfwatch(['start'], { PORT: String(port), PERFWATCH_DEMO_PORT: String(demoPort), PERFWATCH_DATA_DIR: dataDir });
    const [curlLine] = await proc.waitFor(/curl -s -H "Authorization: pw_[^"]+" "[^"]+"/, 60_000);
    const argv = [...curlLine.matchAll(/"([^"]+)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1);
    const { stdout } = await exec('curl', argv, { maxBuffer: 64 * 1024 * 1024 });
    const result = auditResultSchema.parse(JSON.parse(stdout));
    const cell = result.mobile!.s_carolina!;
    expect(cell.lighthouse['finalDisplayedUrl']).toBe(`http://127.0.0.1:${demoPort}/`);
    expect(cell.lighthouse['lighthouseVersion']).toMatch(/^13\./);
    expect(cell.lighthouse.elementCount).toBeGreaterThan(400);
    expect(result.desktop).toBeUndefined();

    expect(await proc.stop('SIGTERM')).toBe(0);
  }, 180_000);
});
