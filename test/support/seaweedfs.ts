import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from './local-servers.ts';

/**
 * A real S3 server on loopback: SeaweedFS (`weed server -s3`: master, volume server, filer and
 * S3 gateway in one process), from the build `scripts/setup.sh` keeps in .tools/bin/weed, with a
 * data directory of its own, one access key (an admin identity) and a bucket. Each test file
 * starts its own and stops it by its pid.
 */

const DEFAULT_BINARY = join(dirname(fileURLToPath(import.meta.url)), '../../.tools/bin/weed');
/** The cold start of four services, and the master's first volume allocation, on a loaded 2-core machine. */
const READY_WITHIN_MS = 90_000;

export interface SeaweedFs {
  /** The S3 endpoint, e.g. http://127.0.0.1:20123 */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A client of the server's own API (path style), for what a test checks behind the store's back. */
  client: S3Client;
  /** From spawn to the first object written, in ms. */
  startupMs: number;
  logFile: string;
  /** The running process's pid (a new one after `restart`). */
  readonly pid: number;
  /** Kills the server at once (SIGKILL: no request finished), keeping its data, ports and bucket. */
  crash(): Promise<void>;
  /** Starts it again on the same data and ports, once crashed; resolves when it takes a write. */
  restart(): Promise<void>;
  /** Freezes it (SIGSTOP): connections are accepted by the kernel and never answered; `thaw` resumes it. */
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

export async function startSeaweedFs({
  binary = DEFAULT_BINARY,
  bucket = 'perfwatch-artifacts',
} = {}): Promise<SeaweedFs> {
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-seaweedfs-'));
  const credentials = {
    accessKeyId: `pw${randomBytes(8).toString('hex')}`,
    secretAccessKey: randomBytes(24).toString('hex'),
  };
  const configFile = join(dir, 's3.json');
  await writeFile(configFile, JSON.stringify(s3Identities(credentials)));
  const ports = await distinctPorts(8);
  const started = Date.now();
  const logFile = join(dir, 'weed.log');
  const log = createWriteStream(logFile);
  let { child, exited } = await launch(binary, serverArgs(dir, configFile, ports), log);
  const endpoint = `http://127.0.0.1:${ports.s3}`;
  const region = 'us-east-1';
  const client = new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  async function stop() {
    client.destroy();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      const ended = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
      if (!ended) child.kill('SIGKILL');
    }
    await exited;
    log.end();
    // The gRPC sockets it made for itself, named by their ports (nothing else has those names).
    for (const [name, port] of grpcSockets(ports))
      await rm(`/tmp/seaweedfs-${name}-grpc-${port}.sock`, { force: true });
    await rm(dir, { recursive: true, force: true });
  }
  try {
    await firstWrite(client, bucket, () => child.exitCode, logFile);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    endpoint,
    bucket,
    region,
    ...credentials,
    client,
    startupMs: Date.now() - started,
    logFile,
    get pid() {
      return child.pid!;
    },
    async crash() {
      child.kill('SIGKILL');
      await exited;
    },
    async restart() {
      ({ child, exited } = await launch(binary, serverArgs(dir, configFile, ports), log));
      await firstWrite(client, bucket, () => child.exitCode, logFile);
    },
    freeze: () => void child.kill('SIGSTOP'),
    thaw: () => void child.kill('SIGCONT'),
    stop,
  };
}

/** `weed` started, its two output streams into the one log (which neither may end: `stop` does). */
async function launch(binary: string, args: string[], log: WriteStream) {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) =>
      reject(new Error(`SeaweedFS could not start (${binary}): ${error.message}. Run scripts/setup.sh to build it.`)),
    );
  });
  return { child, exited };
}

interface Ports {
  master: number;
  masterGrpc: number;
  volume: number;
  volumeGrpc: number;
  filer: number;
  filerGrpc: number;
  s3: number;
  s3Grpc: number;
}

async function distinctPorts(count: 8): Promise<Ports> {
  const taken = new Set<number>();
  while (taken.size < count) taken.add(await freePort());
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = [...taken] as number[];
  return { master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc } as Ports;
}

function grpcSockets(ports: Ports): Array<[string, number]> {
  return [
    ['master', ports.masterGrpc],
    ['volume', ports.volumeGrpc],
    ['filer', ports.filerGrpc],
    ['s3', ports.s3Grpc],
  ];
}

/** Every port chosen (none left to SeaweedFS's fixed defaults), nothing reaching beyond loopback. */
function serverArgs(dir: string, configFile: string, ports: Ports): string[] {
  return [
    'server',
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-dir=${dir}`,
    // Each bucket is a collection that grows volumes of its own (several at once): room for a bucket per case,
    // in volumes of 64 MB (files grow as written, none preallocated).
    '-volume.max=100',
    '-master.volumeSizeLimitMB=64',
    '-master.telemetry=false',
    `-master.port=${ports.master}`,
    `-master.port.grpc=${ports.masterGrpc}`,
    `-volume.port=${ports.volume}`,
    `-volume.port.grpc=${ports.volumeGrpc}`,
    `-filer.port=${ports.filer}`,
    `-filer.port.grpc=${ports.filerGrpc}`,
    `-filer.localSocket=${join(dir, 'filer.sock')}`,
    '-s3',
    `-s3.port=${ports.s3}`,
    `-s3.port.grpc=${ports.s3Grpc}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    `-s3.localSocket=${join(dir, 's3.sock')}`,
    `-s3.config=${configFile}`,
  ];
}

/** SeaweedFS's static identities: one admin key (it may create buckets). */
function s3Identities({ accessKeyId, secretAccessKey }: { accessKeyId: string; secretAccessKey: string }) {
  return {
    identities: [
      {
        name: 'perfwatch',
        credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }],
        actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'],
      },
    ],
  };
}

/** The bucket made and an object written and deleted: the S3 gateway, filer and a volume all answer. */
async function firstWrite(client: S3Client, bucket: string, exitCode: () => number | null, logFile: string) {
  const deadline = Date.now() + READY_WITHIN_MS;
  let last: unknown;
  let created = false;
  while (Date.now() < deadline) {
    if (exitCode() !== null) throw new Error(`SeaweedFS exited (${exitCode()}): ${await tail(logFile)}`);
    try {
      if (!created) await client.send(new CreateBucketCommand({ Bucket: bucket }));
      created = true;
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'ready', Body: 'ready' }));
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'ready' }));
      return;
    } catch (error) {
      // A create answered late (the first try timed out) made the bucket all the same.
      if ((error as Error).name === 'BucketAlreadyOwnedByYou') created = true;
      last = error;
      await sleep(250);
    }
  }
  throw new Error(
    `SeaweedFS did not take a write within ${READY_WITHIN_MS} ms (last: ${(last as Error)?.message}): ${await tail(logFile)}`,
  );
}

/** Its log's first lines and last: a flag it refused is named at the top, above the usage it prints. */
async function tail(file: string): Promise<string> {
  const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n');
  return lines.length <= 30 ? lines.join('\n') : [...lines.slice(0, 8), '…', ...lines.slice(-20)].join('\n');
}
