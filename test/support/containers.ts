import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The container engine the suites that run shipped images use: docker when its engine answers,
 * else podman (scripts/container-engine.sh decides, as `npm run images` does). podman runs with
 * the project's containers.conf unless CONTAINERS_CONF names another.
 */
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const STANDIN = 'localhost/perfwatch-standin';

export interface Command {
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; a non-zero exit throws with the command's output. */
export function run(
  file: string,
  args: readonly string[],
  {
    env = {},
    timeoutMs = 600_000,
    cwd = repoRoot,
  }: { env?: Record<string, string>; timeoutMs?: number; cwd?: string } = {},
): Promise<Command> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd, env: { ...engineEnv(), ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error)
          reject(
            new Error(
              `${file} ${args.join(' ')} failed (${error.code ?? error.signal}):\n${stderr.slice(-6000)}\n${stdout.slice(-2000)}`,
              { cause: error },
            ),
          );
        else resolve({ stdout, stderr });
      },
    );
  });
}

/** Like run, its output streamed to this process's stderr (long builds show their progress). */
export function runLoud(
  file: string,
  args: readonly string[],
  { env = {}, timeoutMs = 1_200_000 }: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: repoRoot,
      env: { ...engineEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    const keep = (chunk: Buffer) => {
      text = (text + chunk.toString('utf8')).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', (chunk: Buffer) => (keep(chunk), process.stderr.write(chunk)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(text);
      else reject(new Error(`${file} ${args.join(' ')} failed (${code ?? signal}):\n${text.slice(-6000)}`));
    });
  });
}

let engineName: string | undefined;

export async function containerEngine(): Promise<string> {
  engineName ??= (await run('bash', ['scripts/container-engine.sh'])).stdout.trim();
  return engineName;
}

/** Set by container-api-setup.ts to the Docker API socket podman serves for testcontainers. */
export const OWN_DOCKER_API = 'PERFWATCH_TEST_DOCKER_API';

/**
 * The environment every engine command runs with: the project's containers.conf for podman,
 * and without the DOCKER_HOST this run points at podman for testcontainers (a docker client
 * would take it for a Docker engine).
 */
export function engineEnv(): NodeJS.ProcessEnv {
  const conf = join(repoRoot, 'scripts/podman-containers.conf');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...(process.env['CONTAINERS_CONF'] || !existsSync(conf) ? {} : { CONTAINERS_CONF: conf }),
  };
  if (env[OWN_DOCKER_API] && env['DOCKER_HOST'] === env[OWN_DOCKER_API]) delete env['DOCKER_HOST'];
  return env;
}

/** `docker compose …` or `podman-compose …`, with the same arguments. */
export async function compose(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 600_000,
): Promise<Command> {
  const engine = await containerEngine();
  return engine === 'docker'
    ? run('docker', ['compose', ...args], { env, timeoutMs })
    : run('podman-compose', args, { env, timeoutMs });
}
