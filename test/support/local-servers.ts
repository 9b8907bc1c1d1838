import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Starts the real servers perfwatch needs on loopback, from the binaries that
 * `scripts/setup.sh` builds: a JetStream-enabled nats-server and FerretDB (a
 * MongoDB-wire server with an SQLite backend). Used by the test harness and the benchmarks.
 * Each server is stopped by its own pid, never by name.
 */

export interface LocalServer {
  /** Connection URL: nats://… or mongodb://… */
  url: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/**
 * A port no one listens on, for a server this process is about to start. Taken below the
 * kernel's ephemeral range: a port from `listen(0)` is one the kernel may hand to the next
 * outgoing connection in the moment before the server binds it (a CI run lost a gateway to
 * EADDRINUSE that way), while ports below the range are only ever taken by asking for them.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [low, high] = belowEphemeral();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await canListen(port, host)) return port;
  }
  throw new Error(`no free port between ${low} and ${high} on ${host} in 100 tries`);
}

/** From 20000 up to the start of the ephemeral range (32768 by Linux's default). */
function belowEphemeral(): [number, number] {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(start) && start > 21_000) return [20_000, start];
  } catch {
    // Not Linux: the same default.
  }
  return [20_000, 32_768];
}

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

async function waitForPort(port: number, child: ChildProcess, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`${name} exited with code ${child.exitCode} before it listened; see its log`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`${name} did not listen on port ${port} within ${timeoutMs} ms`);
}

async function startProcess(
  name: string,
  binary: string,
  args: string[],
  port: number,
  logFile: string,
  url: string,
  env?: NodeJS.ProcessEnv,
): Promise<LocalServer> {
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}) });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) =>
      reject(new Error(`${name} could not start (${binary}): ${error.message}. Run scripts/setup.sh to build it.`)),
    );
  });
  await spawned;
  try {
    await waitForPort(port, child, name, 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    url,
    port,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killed = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
        if (!killed) child.kill('SIGKILL');
      }
      await exited;
      log.end();
    },
  };
}

export interface NatsServerOptions {
  binary: string;
  /** Holds the written configuration, the JetStream store and the log. */
  dir: string;
  port?: number;
  /** nats-server configuration text (limits, TLS, accounts), written beside the data. */
  config?: string;
  /** A configuration file used as it is (a shipped one), instead of `config`. */
  configFile?: string;
  /** The server's environment: a configuration's `$NAME` values are read from it. */
  env?: NodeJS.ProcessEnv;
  /**
   * `own-store` (default): JetStream on, stored under `dir`. `as-configured`: the configuration
   * decides (a shipped file names its own store, or none), so no flag contradicts it.
   */
  jetstream?: 'own-store' | 'as-configured';
}

export async function startNatsServer({
  binary,
  dir,
  port,
  config,
  configFile,
  env,
  jetstream = 'own-store',
}: NatsServerOptions): Promise<LocalServer> {
  const bound = port ?? (await freePort());
  await mkdir(dir, { recursive: true });
  let file = configFile;
  if (config !== undefined) {
    file = join(dir, 'nats-server.conf');
    await writeFile(file, config);
  }
  // Command-line flags win over the file: the address, port, name and store stay ours.
  const args = [
    ...(file ? ['-c', file] : []),
    '-a',
    '127.0.0.1',
    '-p',
    String(bound),
    '-n',
    `perfwatch-local-${bound}`,
  ];
  if (jetstream === 'own-store') {
    const storeDir = join(dir, 'jetstream');
    await mkdir(storeDir, { recursive: true });
    args.push('-js', '-sd', storeDir);
  }
  return startProcess(
    'nats-server',
    binary,
    args,
    bound,
    join(dir, 'nats-server.log'),
    `nats://127.0.0.1:${bound}`,
    env,
  );
}

export async function startFerretDb({
  binary,
  dir,
  port,
}: {
  binary: string;
  dir: string;
  port?: number;
}): Promise<LocalServer> {
  const bound = port ?? (await freePort());
  const dataDir = join(dir, 'sqlite');
  const stateDir = join(dir, 'state');
  await mkdir(dataDir, { recursive: true });
  await mkdir(stateDir, { recursive: true });
  const args = [
    '--handler=sqlite',
    `--sqlite-url=file:${dataDir}/`,
    `--listen-addr=127.0.0.1:${bound}`,
    `--state-dir=${stateDir}`,
    '--debug-addr=-',
    '--telemetry=disable',
    '--log-level=warn',
  ];
  return startProcess('ferretdb', binary, args, bound, join(dir, 'ferretdb.log'), `mongodb://127.0.0.1:${bound}/`);
}
