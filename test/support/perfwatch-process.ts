import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { freePort } from './local-servers.ts';

const bin = join(dirname(fileURLToPath(import.meta.url)), '../../bin/perfwatch.js');

export interface PerfwatchProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `pattern` in stdout+stderr, or rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` and resolves with the exit code once the process has exited. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

/** Runs `perfwatch …` as its own process, the way an operator would. */
export function spawnPerfwatch(
  args: string[],
  env: Record<string, string>,
  options: SpawnOptions = {},
): PerfwatchProcess {
  return spawnNode(
    [bin, ...args],
    {
      // Any free ops port for agents; a gateway given one would serve /readyz there, not on PORT.
      ...(options.bare ? {} : { LOG_LEVEL: 'info', ...(args[0] === 'agent' ? { OPS_PORT: '0' } : {}) }),
      ...env,
    },
    options,
  );
}

export interface SpawnOptions {
  /** Working directory; the repository's root by default. */
  cwd?: string;
  /** Nothing of this process's environment but PATH and HOME: a machine with no configuration. */
  bare?: boolean;
  /**
   * On a terminal: run under util-linux's `script`, which gives the program a pseudo-terminal
   * for its stdout and stderr, as someone typing the command in a shell would. `stop` signals the
   * program itself, not `script` (which would end the session and kill it).
   */
  tty?: boolean;
}

/** The processes `script` (pid) runs: the program, exec'd by its shell. */
const programUnder = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);

/** A word for `sh -c`, as it is. */
const shellWord = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/** Runs a script of this repository (paths from its root) on this Node, watched like perfwatch. */
export function spawnNode(
  args: string[],
  env: Record<string, string>,
  { cwd = join(dirname(bin), '..'), bare = false, tty = false }: SpawnOptions = {},
): PerfwatchProcess {
  const base = bare
    ? { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/root' }
    : process.env;
  const [command, argv] = tty
    ? // exec: the program alone in the terminal's foreground, so Ctrl-C reaches it and no shell.
      ['script', ['-qfec', `exec ${[process.execPath, ...args].map(shellWord).join(' ')}`, '/dev/null']]
    : [process.execPath, args];
  const child = spawn(command, argv, {
    cwd,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  return {
    child,
    output: () => text,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(text);
          if (match) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`perfwatch ${args[0]}: no ${pattern} within ${timeoutMs} ms; output:\n${text.slice(-4000)}`),
          );
        }, timeoutMs);
        listeners.add(check);
        void exited.then(() => {
          if (listeners.has(check)) {
            listeners.delete(check);
            clearTimeout(timer);
            reject(new Error(`perfwatch ${args[0]} exited before ${pattern}; output:\n${text.slice(-4000)}`));
          }
        });
        check();
      });
    },
    async stop(signal = 'SIGTERM', timeoutMs = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      if (tty && signal !== 'SIGKILL') programUnder(child.pid!).forEach((pid) => process.kill(pid, signal));
      else child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * `perfwatch gateway` on a free loopback port, ready once it listens; `env` names its NATS and
 * database and any setting of the test's. It stops unready at once (no readiness delay).
 */
export async function spawnGateway(env: Record<string, string>): Promise<{ process: PerfwatchProcess; url: string }> {
  const port = await freePort();
  const process = spawnPerfwatch(['gateway'], {
    PORT: String(port),
    HOST: '127.0.0.1',
    SHUTDOWN_READINESS_DELAY_MS: '0',
    ...env,
  });
  await process.waitFor(/gateway listening/).catch(async (error: unknown) => {
    await process.stop('SIGKILL');
    throw error;
  });
  return { process, url: `http://127.0.0.1:${port}` };
}

/** Runs a short `perfwatch …` command to its end. */
export async function runPerfwatch(
  args: string[],
  env: Record<string, string>,
  options: SpawnOptions = {},
): Promise<{ code: number | null; output: string }> {
  const proc = spawnPerfwatch(args, env, options);
  const code = await new Promise<number | null>((resolve) => proc.child.once('exit', resolve));
  return { code, output: proc.output() };
}

/**
 * `perfwatch agent` for `location`, measuring pages of this machine (the test site), once it
 * serves its subject: it answers a malformed job at once, proof that it subscribed.
 */
export async function spawnServingAgent(natsUrl: string, location: string, agentId: string): Promise<PerfwatchProcess> {
  const agent = spawnPerfwatch(['agent'], {
    NATS_URL: natsUrl,
    PERFWATCH_LOCATION: location,
    PERFWATCH_AGENT_ID: agentId,
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  await agent.waitFor(/agent serving location/);
  const nc = await connect({ servers: natsUrl });
  try {
    await nc.request(`perfwatch.audit.v1.${location}`, new TextEncoder().encode('{}'), { timeout: 10_000 });
  } finally {
    await nc.close();
  }
  return agent;
}
