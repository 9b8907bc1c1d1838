import { ARTIFACT_CHUNK_BYTES, ARTIFACT_HEADERS, encodeArtifactMessage } from '@perfwatch/common';

/** What the stream reads of a NATS message: its bytes, its headers, and how to answer it. */
export interface ChunkMsg {
  readonly data: Uint8Array;
  readonly headers?: { get(name: string): string } | undefined;
  respond(data: Uint8Array): boolean;
}

export interface ChunkStreamOptions {
  /** Total bytes at most (the kind's bound). */
  maxBytes: number;
  /** Silence this long between two chunks (or before the first) ends the transfer. */
  chunkTimeoutMs: number;
  chunkBytes?: number;
}

/** Why a transfer ended before its last chunk: said in the snapshot's log, never trusted further. */
export class TransferFailed extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'TransferFailed';
    this.code = code;
  }
}

export interface ChunkStream extends AsyncIterable<Uint8Array> {
  /** Hands over one message from the push subject (the subscription's callback). */
  offer(msg: ChunkMsg): void;
  /** Ends the stream from outside (the pull was refused): a waiting reader fails. */
  fail(error: TransferFailed): void;
  /** The bytes the agent said it sends (its answer to the pull): the last chunk must end there. */
  expect(bytes: number): void;
}

const refuse = (msg: ChunkMsg, error: TransferFailed) =>
  msg.respond(encodeArtifactMessage({ ok: false, code: error.code, message: error.message.slice(0, 500) }));

/** What is wrong with the next chunk of a transfer, or null. */
function chunkProblem(
  msg: ChunkMsg,
  last: boolean,
  now: { nextSeq: number; total: number; maxBytes: number; chunkBytes: number; expectedBytes: number | undefined },
): TransferFailed | null {
  const seq = msg.headers?.get(ARTIFACT_HEADERS.seq) ?? '';
  if (seq !== String(now.nextSeq))
    return new TransferFailed('BAD_SEQ', `chunk ${seq || '(none)'} where ${now.nextSeq} was due`);
  const size = msg.data.byteLength;
  if (size > now.chunkBytes) return new TransferFailed('CHUNK_TOO_LARGE', `chunk of ${size} bytes`);
  if (size === 0 && !last) return new TransferFailed('EMPTY_CHUNK', 'an empty chunk before the last');
  const total = now.total + size;
  if (total > now.maxBytes) return new TransferFailed('TOO_LARGE', `past ${now.maxBytes} bytes`);
  const expected = now.expectedBytes;
  if (expected !== undefined && (total > expected || (last && total !== expected)))
    return new TransferFailed('BAD_LENGTH', `${total} bytes sent of ${expected} announced`);
  return null;
}

/**
 * The chunks of one transfer as an AsyncIterable for ArtifactStore.put, validated one by one
 * (sequence, size, total) and acknowledged only once the store asked for the next: the
 * acknowledgement is the sender's permission to send more, so at most one chunk per transfer
 * is ever held here. A sender that does not wait for it, sends out of order, too much, or
 * nothing for `chunkTimeoutMs` ends the transfer.
 */
export function createChunkStream(options: ChunkStreamOptions): ChunkStream {
  return new TransferChunks(options);
}

class TransferChunks implements ChunkStream {
  readonly #maxBytes: number;
  readonly #chunkTimeoutMs: number;
  readonly #chunkBytes: number;
  #pending: { msg: ChunkMsg; last: boolean } | null = null;
  #failure: TransferFailed | null = null;
  #finished = false;
  #wake: (() => void) | null = null;
  #expectedBytes: number | undefined;
  #nextSeq = 0;
  #total = 0;

  constructor({ maxBytes, chunkTimeoutMs, chunkBytes = ARTIFACT_CHUNK_BYTES }: ChunkStreamOptions) {
    this.#maxBytes = maxBytes;
    this.#chunkTimeoutMs = chunkTimeoutMs;
    this.#chunkBytes = chunkBytes;
  }

  expect(bytes: number): void {
    this.#expectedBytes = bytes;
  }

  fail(error: TransferFailed, msg?: ChunkMsg): void {
    if (msg) refuse(msg, error);
    if (this.#pending) refuse(this.#pending.msg, error);
    this.#pending = null;
    this.#failure ??= error;
    this.#finished = true;
    this.#wake?.();
  }

  offer(msg: ChunkMsg): void {
    if (this.#finished) return void refuse(msg, this.#failure ?? new TransferFailed('CLOSED', 'the transfer is over'));
    if (this.#pending)
      return this.fail(new TransferFailed('OVERRUN', 'a chunk came before the last was acknowledged'), msg);
    const last = msg.headers?.get(ARTIFACT_HEADERS.last) === '1';
    const problem = chunkProblem(msg, last, {
      nextSeq: this.#nextSeq,
      total: this.#total,
      maxBytes: this.#maxBytes,
      chunkBytes: this.#chunkBytes,
      expectedBytes: this.#expectedBytes,
    });
    if (problem) return this.fail(problem, msg);
    this.#total += msg.data.byteLength;
    this.#nextSeq++;
    this.#pending = { msg, last };
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    try {
      while (true) {
        await this.#waitForChunk();
        if (!this.#pending) throw this.#failure ?? new TransferFailed('CLOSED', 'the transfer is over');
        const { msg, last } = this.#pending;
        const expected = this.#expectedBytes;
        // The agent's answer to the pull may be read after its first chunk: the length is checked again here.
        if (last && expected !== undefined && this.#total !== expected) {
          this.fail(new TransferFailed('BAD_LENGTH', `${this.#total} bytes sent of ${expected} announced`));
          continue;
        }
        yield msg.data;
        // The store took the chunk: now the sender may send the next.
        this.#pending = null;
        msg.respond(encodeArtifactMessage({ ok: true, seq: this.#nextSeq - 1 }));
        if (last) {
          this.#finished = true;
          return;
        }
      }
    } finally {
      // The reader stopped early (the store failed): the sender hears so at its next chunk.
      if (!this.#finished) this.fail(new TransferFailed('STORE_FAILED', 'the gateway could not store the artifact'));
    }
  }

  async #waitForChunk(): Promise<void> {
    if (this.#pending || this.#finished) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      timer = setTimeout(
        () => this.fail(new TransferFailed('STALLED', `no chunk for ${this.#chunkTimeoutMs} ms`)),
        this.#chunkTimeoutMs,
      );
    });
    clearTimeout(timer);
    this.#wake = null;
  }
}
