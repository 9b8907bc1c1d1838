import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { containerEngine, engineEnv, OWN_DOCKER_API, run, runLoud, STANDIN } from './containers.ts';

/** Every container the suites start carries it; the teardown removes them all (Ryuk's job). */
export const TEST_LABEL = { 'perfwatch.test': 'true' };

/** A JetStream nats-server in a container of its own, through testcontainers. */
export async function startNatsContainer(image: string): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const started = await new GenericContainer(image)
    .withCommand(['-js'])
    .withExposedPorts(4222)
    .withLabels(TEST_LABEL)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .start();
  const port = started.getMappedPort(4222);
  return {
    url: `nats://${started.getHost()}:${port}`,
    port,
    stop: async () => void (await started.stop({ timeout: 2_000 })),
  };
}

/**
 * For the `containers` project: a Docker API for testcontainers, and the images it starts. A
 * contributor's Docker serves as it is; otherwise podman serves the Docker API on a socket of
 * this run's own (`podman system service`). With no registry reachable, the suites' servers
 * come from the stand-in images of scripts/standin-images.sh. global-setup.ts calls this for
 * the `containers` project, then starts NATS and MongoDB through testcontainers.
 */
export async function prepareContainerApi(): Promise<() => Promise<void>> {
  await runLoud('bash', ['scripts/standin-images.sh']);
  process.env['PERFWATCH_TEST_NATS_IMAGE'] ??= `${STANDIN}/nats:2`;
  process.env['PERFWATCH_TEST_MONGO_IMAGE'] ??= `${STANDIN}/mongo:ferretdb`;
  // Ryuk, testcontainers' reaper, is an image from Docker Hub; removeTestContainers does its
  // job, also for containers a failed start or a killed run left behind.
  process.env['TESTCONTAINERS_RYUK_DISABLED'] ??= 'true';
  const engine = await containerEngine();
  const removeTestContainers = async () => {
    const { stdout } = await run(engine, [
      'ps',
      '-aq',
      ...Object.entries(TEST_LABEL).flatMap(([key, value]) => ['--filter', `label=${key}=${value}`]),
    ]);
    const ids = stdout.split(/\s+/).filter(Boolean);
    if (ids.length) await run(engine, ['rm', '-f', ...ids]);
  };
  await removeTestContainers();
  if (engine === 'docker' || process.env['DOCKER_HOST']) return removeTestContainers;

  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-podman-api-'));
  const socket = join(dir, 'podman.sock');
  const service: ChildProcess = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], {
    env: engineEnv(),
    stdio: 'ignore',
  });
  for (let waited = 0; !existsSync(socket); waited += 100) {
    if (service.exitCode !== null || waited > 30_000)
      throw new Error(`podman system service did not serve ${socket} (exit ${service.exitCode})`);
    await sleep(100);
  }
  process.env['DOCKER_HOST'] = `unix://${socket}`;
  process.env[OWN_DOCKER_API] = process.env['DOCKER_HOST'];
  return async () => {
    await removeTestContainers();
    service.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  };
}
