import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { errorEnvelopeSchema } from '@perfwatch/common';
import { createAdmin, gatewayConfigWith, SqliteStore, startGateway, type GatewayRuntime } from '@perfwatch/gateway';

// The gateway as slow, walking-away or guessing clients meet it: a real HTTP server on
// loopback, the embedded store in a file. Headers and bodies that trickle get 408; an overview
// reader that stops reading is cut off and the store's statement (its read snapshot) released;
// an address that keeps failing to authenticate is refused for the rest of the minute.

let dir: string;
let path: string;
let store: SqliteStore;
let runtime: GatewayRuntime;
let token: string;
const logs: string[] = [];
const RECORDS = 120_000;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pw-timeouts-'));
  path = join(dir, 'perfwatch.sqlite');
  store = new SqliteStore({ path });
  await store.init();
  const admin = createAdmin(store);
  const { token: issued, user } = await admin.createUser('reader');
  token = issued;
  // KPI records written straight to the file: far more than a socket's buffers hold as JSON.
  const db = new DatabaseSync(path);
  const insert = db.prepare(
    "INSERT INTO kpis (snapshot_id, project_id, user_id, date, domain, url, device, location, update_type, section, kpi, data) VALUES ('s', 'p', ?, ?, 'big.example', 'https://big.example/', 'mobile', 'london', 'manual', 'PERFORMANCE', ?, ?)",
  );
  db.exec('BEGIN');
  const day = Date.parse('2026-05-01T00:00:00Z');
  // Owned by a snapshot: records of none are orphans, which the retention pass deletes.
  db.prepare(
    "INSERT INTO snapshots (id, project_id, user_id, update_id, url, domain, date, update_type, available) VALUES ('s', 'p', ?, 'u', 'https://big.example/', 'big.example', ?, 'manual', '[]')",
  ).run(user.id, day);
  for (let i = 0; i < RECORDS; i++)
    insert.run(user.id, day + i, `kpi-${i % 50}`, JSON.stringify({ value: i, unit: 'millisecond', score: 0.5 }));
  db.exec('COMMIT');
  db.close();
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(line) });
  runtime = await startGateway({
    store,
    localAgents: [],
    logger,
    config: gatewayConfigWith({
      PORT: 0,
      HOST: '127.0.0.1',
      SHUTDOWN_READINESS_DELAY_MS: 0,
      HEADERS_TIMEOUT_MS: 1_000,
      REQUEST_TIMEOUT_MS: 2_000,
      ANSWER_STALL_MS: 1_000,
      AUTH_FAILURES_PER_MINUTE: 5,
    }),
  });
}, 60_000);

afterAll(async () => {
  await runtime?.stop();
  await store?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Everything the server sends on a raw connection until it closes it, and when that was. */
function rawExchange(write: (socket: Socket) => void): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(runtime.http.port, '127.0.0.1', () => write(socket));
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, ms: performance.now() - started }));
  });
}

function envelopeOf(response: string) {
  return errorEnvelopeSchema.parse(JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)));
}

describe('slow clients', () => {
  it('408, in the envelope, to a client that trickles its headers', async () => {
    const { text, ms } = await rawExchange((socket) => {
      socket.write('GET /v1/projects HTTP/1.1\r\nHost: x\r\n');
      const trickle = setInterval(
        () => (socket.writable ? socket.write('X-Slow: y\r\n') : clearInterval(trickle)),
        300,
      );
      socket.on('close', () => clearInterval(trickle));
    });
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(envelopeOf(text)).toMatchObject({
      status: 'REQUEST_TIMEOUT',
      message: 'The request took too long to arrive.',
    });
    // The headers' limit (1 s), found by a check every second.
    expect(ms).toBeLessThan(4_000);
  });

  it('408 to a client that sends its headers and trickles its body', async () => {
    const { text, ms } = await rawExchange((socket) => {
      socket.write(
        `POST /v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
      );
      const trickle = setInterval(() => (socket.writable ? socket.write(' ') : clearInterval(trickle)), 300);
      socket.on('close', () => clearInterval(trickle));
    });
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(envelopeOf(text).status).toBe('REQUEST_TIMEOUT');
    expect(ms).toBeGreaterThanOrEqual(1_900);
    expect(ms).toBeLessThan(5_000);
  });

  it("cuts off an overview reader that stops reading, and releases the store's statement", async () => {
    const checkpoint = () => {
      const db = new DatabaseSync(path);
      try {
        db.exec('PRAGMA busy_timeout = 0');
        // Something in the WAL past any snapshot a reader holds, then ask for all of it back in the file.
        db.exec(
          "INSERT INTO meta (key, value) VALUES ('probe', '1') ON CONFLICT (key) DO UPDATE SET value = value + 1",
        );
        return (db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number }).busy;
      } finally {
        db.close();
      }
    };
    expect(checkpoint()).toBe(0);
    const socket = connect(runtime.http.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.on('connect', resolve));
    let received = 0;
    let stalled = false;
    socket.on('data', (chunk) => {
      received += chunk.length;
      // Read the head of the answer, then stop reading: the kernel's buffers fill, the server's writes wait.
      if (!stalled) socket.pause();
      stalled = true;
    });
    let closed = false;
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    socket.write(
      `GET /v1/overview?startDate=2026-05-01&endDate=2026-05-02 HTTP/1.1\r\nHost: x\r\nAuthorization: ${token}\r\n\r\n`,
    );
    await vi.waitFor(() => expect(received).toBeGreaterThan(0), { timeout: 10_000 });
    // While the reader is stalled, its statement holds a read snapshot: the WAL cannot be emptied.
    expect(checkpoint()).toBe(1);
    await vi.waitFor(
      () => expect(logs.some((l) => l.includes('overview reader stopped reading; cut off'))).toBe(true),
      { timeout: 10_000, interval: 100 },
    );
    // Cut off: the statement is released, the WAL empties; the client sees the connection end, never a whole array.
    await vi.waitFor(() => expect(checkpoint()).toBe(0), { timeout: 5_000, interval: 100 });
    socket.resume();
    await vi.waitFor(() => expect(closed).toBe(true), { timeout: 10_000 });
    expect(received).toBeLessThan(RECORDS * 60);
  }, 60_000);
});

/** GET /v1/projects with a token, from a given loopback address. */
function projectsFrom(localAddress: string, authorization: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: runtime.http.port,
        path: '/v1/projects',
        localAddress,
        headers: { Authorization: authorization },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('failed authentications', () => {
  it('refuses an address that failed 5 times this minute, whatever token it sends next; good tokens never count, other addresses are not held', async () => {
    // Many good requests first: only failures count.
    for (let i = 0; i < 20; i++) expect((await projectsFrom('127.0.0.3', token)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await projectsFrom('127.0.0.3', `pw_${'A'.repeat(43)}`)).status).toBe(401);
    const refused = await projectsFrom('127.0.0.3', token);
    expect(refused.status).toBe(429);
    expect(errorEnvelopeSchema.parse(JSON.parse(refused.body))).toMatchObject({
      status: 'TOO_MANY_REQUESTS',
      errors: ['limit: 5 failed authentications per minute per client address'],
    });
    expect(refused.body).not.toContain(token);
    // Another client address is not held by it.
    expect((await projectsFrom('127.0.0.4', token)).status).toBe(200);
  });
});

describe('the request log', () => {
  it('keeps no token a client put in a URL, by name or by shape', async () => {
    const before = logs.length;
    const res = await fetch(
      `http://127.0.0.1:${runtime.http.port}/v1/projects?token=${encodeURIComponent(token)}&note=${encodeURIComponent(token)}`,
      { headers: { Authorization: token } },
    );
    expect(res.status).toBe(400);
    const lines = logs.slice(before).join('\n');
    expect(lines).toContain('/v1/projects?token=[redacted]');
    expect(lines).not.toContain(token);
    expect(lines).not.toContain(token.slice(3, 20));
  });
});
