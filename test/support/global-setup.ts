import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { startDemoSite } from '@perfwatch/local';
import { startFerretDb, startNatsServer } from './local-servers.ts';
import { prepareContainerApi, startNatsContainer, TEST_LABEL } from './container-api-setup.ts';
import { OWN_DOCKER_API } from './containers.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const tools = join(root, '.tools/bin');

declare module 'vitest' {
  export interface ProvidedContext {
    natsUrl: string;
    mongoUri: string;
    siteUrl: string;
    natsServerBinary: string;
    /** For suites that need a MongoDB-wire server of their own, e.g. to restart it. */
    ferretDbBinary: string;
    /** Where suites start their own nats-server through testcontainers (see isolatedNats); null: as a process. */
    natsContainer: { image: string; dockerHost: string | null } | null;
  }
}

type Stop = () => Promise<void>;

/**
 * Starts the real servers the integration and end-to-end suites talk to, on free loopback
 * ports: a JetStream nats-server, a MongoDB-wire server and the fixture site. NATS_URL and
 * MONGODB_URI point at servers started elsewhere instead; where a Docker API answers (Docker,
 * or podman's service started by container-api-setup.ts), testcontainers starts them from
 * PERFWATCH_TEST_NATS_IMAGE and PERFWATCH_TEST_MONGO_IMAGE (`nats:2` and `mongo:7` by default).
 * A server that cannot start fails the run: nothing here is ever skipped.
 */
export default async function setup(project: TestProject): Promise<Stop> {
  const stops: Stop[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-test-'));
  stops.push(() => rm(dir, { recursive: true, force: true }));
  let docker: boolean;
  try {
    if (project.name === 'containers') {
      // The same suites as the integration project, their servers started by testcontainers.
      stops.push(await prepareContainerApi());
      docker = true;
    } else docker = !process.env['NATS_URL'] || !process.env['MONGODB_URI'] ? await dockerAnswers() : false;
    project.provide('natsUrl', process.env['NATS_URL'] ?? (await startNats(docker, dir, stops)));
    project.provide('mongoUri', process.env['MONGODB_URI'] ?? (await startMongo(docker, dir, stops)));
    project.provide('natsServerBinary', join(tools, 'nats-server'));
    project.provide(
      'natsContainer',
      docker ? { image: natsImage(), dockerHost: process.env['DOCKER_HOST'] ?? null } : null,
    );
    project.provide('ferretDbBinary', join(tools, 'ferretdb'));
    const site = await startDemoSite();
    stops.push(site.close);
    project.provide('siteUrl', site.url);
  } catch (error) {
    await stopAll(stops);
    throw new Error(`test servers could not start (run scripts/setup.sh): ${(error as Error).message}`, {
      cause: error,
    });
  }
  return () => stopAll(stops);
}

const natsImage = () => process.env['PERFWATCH_TEST_NATS_IMAGE'] ?? 'nats:2';

async function stopAll(stops: Stop[]): Promise<void> {
  for (const stop of stops.reverse()) await stop();
}

async function dockerAnswers(): Promise<boolean> {
  // The machine's own Docker API only: not the podman API the containers project serves itself
  // (this module is loaded again per project, after that project may have set DOCKER_HOST).
  const machineDockerHost =
    process.env['DOCKER_HOST'] === process.env[OWN_DOCKER_API] ? undefined : process.env['DOCKER_HOST'];
  if (!machineDockerHost && !existsSync('/var/run/docker.sock')) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

async function startNats(docker: boolean, dir: string, stops: Stop[]): Promise<string> {
  if (docker) {
    const container = await startNatsContainer(natsImage());
    stops.push(container.stop);
    return container.url;
  }
  const server = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  stops.push(server.stop);
  return server.url;
}

async function startMongo(docker: boolean, dir: string, stops: Stop[]): Promise<string> {
  if (docker) {
    const { GenericContainer, Wait } = await import('testcontainers');
    const image = process.env['PERFWATCH_TEST_MONGO_IMAGE'] ?? 'mongo:7';
    const container = await new GenericContainer(image)
      .withExposedPorts(27017)
      .withLabels(TEST_LABEL)
      .withWaitStrategy(Wait.forListeningPorts())
      .start();
    stops.push(async () => void (await container.stop()));
    return `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/`;
  }
  const server = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'ferretdb') });
  stops.push(server.stop);
  return server.url;
}
