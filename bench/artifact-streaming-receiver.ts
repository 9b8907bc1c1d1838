/**
 * The gateway's side of bench/artifact-streaming.ts, in a process of its own so that its memory
 * is the receiver's alone (the senders hold their caches in the bench's process): the gateway's
 * receiver as shipped (gateway/src/artifacts/artifact-receiver.ts, limited as gateway/src/runtime.ts
 * limits it to ARTIFACT_TRANSFERS_AT_ONCE by limited-receiver.ts) into the artifact store, on a
 * NATS connection of its own. Told over IPC which runs to pull; answers with each transfer's
 * state and the highest of its own memory figures, sampled while the transfers ran.
 * The store is made as the gateway makes it, from its settings (ARTIFACT_STORE=fs or s3).
 *   node bench/artifact-streaming-receiver.ts <nats url> <artifact settings as JSON>
 */
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { z } from 'zod';
import { LOCATIONS, type ArtifactState } from '@perfwatch/common';
import { createArtifactReceiver } from '../gateway/src/artifacts/artifact-receiver.ts';
import { limitedReceiver } from '../gateway/src/artifacts/limited-receiver.ts';
import { artifactStoreFromSettings } from '../gateway/src/artifacts/store/artifact-store-from-settings.ts';
import { artifactSettings } from '../gateway/src/settings/artifacts.ts';
import { streamingKey, type ReceiverAnswer } from './artifact-streaming.ts';

const askSchema = z.discriminatedUnion('do', [
  z.object({
    do: z.literal('receive'),
    location: z.enum(LOCATIONS),
    agentId: z.string(),
    jobIds: z.array(z.string()),
  }),
  z.object({ do: z.literal('exit') }),
]);

const [natsUrl, settings] = process.argv.slice(2);
if (!natsUrl || !settings) throw new Error('usage: artifact-streaming-receiver.ts <nats url> <artifact settings>');
const config = z.object(artifactSettings.settings).parse(JSON.parse(settings));
const { store } = artifactStoreFromSettings(config);
const nc = await connect({ servers: natsUrl });
const receiver = limitedReceiver(
  createArtifactReceiver({ nc, store, logger: pino({ level: 'warn' }) }),
  config.ARTIFACT_TRANSFERS_AT_ONCE,
);

const MiB = 1024 * 1024;

/** The highest of process.memoryUsage()'s figures every 20 ms while `work` runs. */
async function sampled<T>(work: () => Promise<T>): Promise<{ value: T; peaks: ReceiverAnswer['peaks'] }> {
  const peaks = { rssMb: 0, heapUsedMb: 0, externalMb: 0, arrayBuffersMb: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    peaks.rssMb = Math.max(peaks.rssMb, m.rss / MiB);
    peaks.heapUsedMb = Math.max(peaks.heapUsedMb, m.heapUsed / MiB);
    peaks.externalMb = Math.max(peaks.externalMb, m.external / MiB);
    peaks.arrayBuffersMb = Math.max(peaks.arrayBuffersMb, m.arrayBuffers / MiB);
  };
  const timer = setInterval(sample, 20);
  try {
    const value = await work();
    sample();
    return { value, peaks };
  } finally {
    clearInterval(timer);
  }
}

process.on('message', (raw) => {
  const ask = askSchema.parse(raw);
  if (ask.do === 'exit') {
    void nc.drain().finally(() => process.exit(0));
    return;
  }
  const now = process.memoryUsage();
  const before = { rssMb: now.rss / MiB, heapUsedMb: now.heapUsed / MiB, arrayBuffersMb: now.arrayBuffers / MiB };
  const started = performance.now();
  void sampled(() =>
    Promise.all(
      ask.jobIds.map((jobId): Promise<ArtifactState> =>
        receiver.receive({ location: ask.location, agentId: ask.agentId, jobId, key: streamingKey(jobId) }),
      ),
    ),
  ).then(({ value: states, peaks }) => {
    const answer: ReceiverAnswer = { states, ms: performance.now() - started, before, peaks };
    process.send!(answer);
  });
});
process.send!('ready');
