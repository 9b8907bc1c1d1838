import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// The alert rules pass promtool's checks, and fire (or stay quiet) on the series their unit
// tests feed them.
const dir = join(dirname(fileURLToPath(import.meta.url)), '../../deploy/prometheus');
const run = promisify(execFile);

describe('Prometheus alert rules', () => {
  it('pass promtool check rules', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', join(dir, 'perfwatch-rules.yml')]);
    expect(stdout).toMatch(/SUCCESS: 7 rules found/);
  });

  it('pass their promtool unit tests (an unserved location alerts, a never-served one does not; a location with many suspect runs alerts, a calm one does not; a given-up webhook delivery alerts, retries do not)', async () => {
    const { stdout } = await run('promtool', ['test', 'rules', 'perfwatch-rules.test.yml'], { cwd: dir });
    expect(stdout).toMatch(/SUCCESS/);
  });
});
