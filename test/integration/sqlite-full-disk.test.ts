import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, open, readdir, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorEnvelopeSchema } from '@perfwatch/common';
import { freePort } from '../support/local-servers.ts';
import { isolatedNats } from '../support/test-services.ts';

// `perfwatch gateway` on the embedded store, its data directory a small tmpfs of its own (a
// mount namespace of the gateway's, as an unprivileged user may make with `unshare`), filled
// to the last byte from outside through /proc/<pid>/root: a real full disk under real SQLite.

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const PROJECT = 'https://full-disk.example/';
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let dir: string;
let gateway: ChildProcess;
let output = '';
let base: string;
let token: string;

/** The gateway's data directory as this process reaches it: through the gateway's own mounts. */
const seenFromOutside = (name: string) => `/proc/${gateway.pid}/root${dir}/${name}`;

beforeAll(async () => {
  nats = await isolatedNats();
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-full-disk-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const perfwatch = `"${process.execPath}" "${join(root, 'bin/perfwatch.js')}"`;
  // One shell in the namespace: the tmpfs, a user and a project made by perfwatch admin, then the gateway itself.
  const script = [
    `mount -t tmpfs -o size=4m tmpfs "${dir}" || exit 97`,
    `${perfwatch} admin create-user full-disk --json || exit 98`,
    `${perfwatch} admin add-project full-disk ${PROJECT} --locations london || exit 98`,
    `exec ${perfwatch} gateway`,
  ].join('\n');
  gateway = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script], {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: process.env['HOME'] ?? '/root',
      PERFWATCH_DATA_DIR: dir,
      NATS_URL: nats.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      SHUTDOWN_READINESS_DELAY_MS: '0',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (chunk: Buffer) => void (output += chunk.toString('utf8'));
  gateway.stdout!.on('data', collect);
  gateway.stderr!.on('data', collect);
  await new Promise<void>((resolve, reject) => {
    const check = () => /gateway listening/.test(output) && resolve();
    gateway.stdout!.on('data', check);
    gateway.stderr!.on('data', check);
    gateway.once('exit', (code) =>
      reject(new Error(`the gateway in its namespace exited (${code}) before listening:\n${output.slice(-3000)}`)),
    );
  });
  token = /"token":"(pw_[A-Za-z0-9_-]+)"/.exec(output)![1]!;
}, 60_000);

afterAll(async () => {
  if (gateway && gateway.exitCode === null) {
    const exited = new Promise((resolve) => gateway.once('exit', resolve));
    gateway.kill('SIGTERM');
    await exited;
  }
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${base}/v1/${path}`, {
    method: 'POST',
    headers: { Authorization: token, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as unknown };
};

/** Writes zeros into the tmpfs until it has no byte left. */
async function fillTheDisk(): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024);
  const file = await open(seenFromOutside('filler'), 'w');
  try {
    for (;;) await file.write(chunk);
  } catch (error) {
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
  } finally {
    await file.close();
  }
  // The last bytes a whole chunk did not fit in.
  await writeFile(seenFromOutside('filler-tail'), Buffer.alloc(4096)).catch(() => undefined);
  for (let size = 2048; size >= 1; size /= 2)
    await writeFile(seenFromOutside(`filler-${size}`), Buffer.alloc(size)).catch(() => undefined);
}

describe('the embedded store on a full disk', () => {
  it('answers 503 saying nothing was saved (a transaction too), and stores again once there is room', async () => {
    await fillTheDisk();
    const budgets = { url: PROJECT, budgets: { lcp: 2500 } };
    const webhook = { targetUrl: 'http://127.0.0.1:9/hook' };
    for (const [path, body] of [
      ['budgets', budgets],
      // Counted and added in one transaction: the write that hid its error behind a failed ROLLBACK.
      ['webhooks', webhook],
    ] as const) {
      const refused = await post(path, body);
      expect(refused.status, `${path}: ${JSON.stringify(refused.body)}`).toBe(503);
      const envelope = errorEnvelopeSchema.parse(refused.body);
      expect(envelope.status).toBe('SERVICE_UNAVAILABLE');
      expect(envelope.message).toBe('The service has no room left to store this: nothing was saved.');
      expect(envelope.errors.join(' ')).toMatch(/store: full/);
    }
    expect(output).toMatch(/the store at .* is full: the write was not kept/);

    for (const name of await readdir(seenFromOutside('')))
      if (name.startsWith('filler')) await unlink(seenFromOutside(name));
    expect((await post('budgets', budgets)).status).toBe(200);
    expect((await post('webhooks', webhook)).status).toBe(200);
    // The refused webhook left nothing behind: one webhook, the one added once there was room.
    const listed = await fetch(`${base}/v1/webhooks`, { headers: { Authorization: token } });
    expect(((await listed.json()) as { webhooks: unknown[] }).webhooks).toHaveLength(1);
  }, 60_000);
});
