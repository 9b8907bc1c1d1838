import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// What outlives a power loss is what reached the disk: a write the embedded store acknowledged
// (an update accepted, a token revoked) must have had its WAL synced before it returned. Watched
// for real: the store in a process of its own under strace, its fsync and fdatasync calls on the
// WAL counted between two marker files the process opens around each write.

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const exec = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-durability-'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The store's writes, each between markers `<name>.begin` and `<name>.end` opened just around it. */
const WRITER = (storeModule: string, dir: string) => `
import { closeSync, openSync } from 'node:fs';
import { SqliteStore } from ${JSON.stringify(storeModule)};
const mark = (name) => closeSync(openSync(${JSON.stringify(dir)} + '/' + name, 'w'));
const store = new SqliteStore({ path: ${JSON.stringify(join(dir, 'perfwatch.sqlite'))} });
await store.init();
const user = await store.createUser('durable');
await store.addToken({ prefix: 'durable1', userId: user.id, digest: 'a'.repeat(64) });
const project = await store.addProject({ userId: user.id, url: 'https://durable.example/', domain: 'durable.example',
  locations: ['london'], defaultLocation: 'london', runs: 1, schedule: null });
mark('update.begin');
await store.createUpdate({ id: 'accepted-1', userId: user.id, projectId: project.id, url: project.url,
  devices: ['mobile'], locations: ['london'], updateType: 'manual', runs: 1 });
mark('update.end');
mark('revoke.begin');
await store.revokeToken('durable1');
mark('revoke.end');
await store.close();
`;

/** The syncs of the WAL file the traced process made between the markers of `name`. */
function walSyncsWithin(trace: string, name: string): number {
  const lines = trace.split('\n');
  const at = (marker: string) => lines.findIndex((l) => l.includes(`/${marker}"`) && l.includes('openat('));
  const [begin, end] = [at(`${name}.begin`), at(`${name}.end`)];
  expect(begin, `${name}.begin in the trace`).toBeGreaterThanOrEqual(0);
  expect(end, `${name}.end in the trace`).toBeGreaterThan(begin);
  return lines.slice(begin, end).filter((l) => /\b(fsync|fdatasync)\(\d+<[^>]*\.sqlite-wal>\)\s*=\s*0/.test(l)).length;
}

describe('the embedded store through a power loss', () => {
  it('has each acknowledged write in its WAL on the disk before it returns (synced at every commit)', async () => {
    const script = join(dir, 'writer.ts');
    await writeFile(script, WRITER(join(root, 'gateway/src/store/sqlite-store.ts'), dir));
    const traced = join(dir, 'trace.txt');
    await exec('strace', ['-f', '-y', '-e', 'trace=openat,fsync,fdatasync', '-o', traced, process.execPath, script], {
      cwd: root,
    }).catch((error: unknown) => {
      throw new Error(`strace (Debian's strace package) runs the store's writer: ${(error as Error).message}`);
    });
    const trace = await readFile(traced, 'utf8');
    expect(walSyncsWithin(trace, 'update')).toBeGreaterThanOrEqual(1);
    expect(walSyncsWithin(trace, 'revoke')).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
