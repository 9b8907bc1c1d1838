import { isUtf8 } from 'node:buffer';
import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { LRUCache } from 'lru-cache';
import pLimit from 'p-limit';
import { isOneJsonObject } from '../http/json-object-text.ts';
import {
  gunzipSized,
  lighthouseResultSchema,
  MAX_REPLY_INFLATED_BYTES,
  type LighthouseResult,
} from '@perfwatch/common';

const gzipAsync = promisify(gzip);

/**
 * Compressions under way at once, across all updates (results that came as objects: local
 * mode, agents before v1.5). Each holds a zlib context and its output from the moment it is
 * asked for, queued or not: a thousand updates storing together piled up over a gigabyte of
 * them (bench/results.md, dispatch at scale).
 */
const compressing = pLimit(availableParallelism());

/** The largest output buffer a result's gzip trailer can make the gateway allocate up front. */
const MAX_SIZED_OUTPUT = 4 * 1024 * 1024;

/**
 * Results inflated by their check, kept for the sync answer that writes them moments later
 * (the cell is checked before it is stored, and its update answers once its last cell is):
 * inflating each representative result twice was a fifth of the gateway's CPU at a thousand
 * updates, with a gigabyte of buffers allocated and dropped (bench/results.md). Bounded: an
 * async update's results, which no answer writes, or an answer far behind, fall out of it, and
 * are inflated again if asked for.
 */
const INFLATED_KEPT_BYTES = 32 * 1024 * 1024;
const inflatedKept = new LRUCache<ResultBytes, Buffer>({
  maxSize: INFLATED_KEPT_BYTES,
  sizeCalculation: (bytes) => Math.max(1, bytes.byteLength),
});

/** A run's result that does not hold together: not gzip, past the bound, not one JSON object. */
export class BadResultBytes extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BadResultBytes';
  }
}

/**
 * A result's gzip inflated on this thread, in one output buffer sized by its trailer. Measured
 * on an 18 kB result (bench/results.md): 0.05 ms here against 0.39 ms through the thread pool,
 * whose round trip, chunked output and concatenation cost more than inflating. The trailer was
 * bounded on receipt; one that lies costs more passes or a larger buffer, never more output than
 * MAX_REPLY_INFLATED_BYTES.
 */
export function inflateResult(gzipped: Buffer): Buffer {
  if (gzipped.byteLength < 18) throw new BadResultBytes('the result is not gzip');
  try {
    return gunzipSized(gzipped, { maxOutput: MAX_REPLY_INFLATED_BYTES, maxChunk: MAX_SIZED_OUTPUT });
  } catch (error) {
    throw new BadResultBytes(`the result does not inflate: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * A stored result's JSON, inflated into one buffer of the size its trailer gives (zlib checked
 * that trailer when the result was checked on receipt; one that lied still costs one buffer of
 * MAX_REPLY_INFLATED_BYTES at most), in UTF-8 and seen to be one JSON object, for answers to
 * write as it is. Not inflateResult's 4 MiB chunks: a 16 MiB result would be four chunks and
 * their 16 MiB concatenation at once. The bound is one byte past the largest result, since zlib
 * allocates another chunk when one is filled exactly. A result stored before results were
 * checked as UTF-8 may hold bytes that are not: it is its decoded text then.
 */
export function storedResultJson(gzipped: Uint8Array): Buffer {
  const bytes = Buffer.from(gzipped.buffer, gzipped.byteOffset, gzipped.byteLength);
  if (bytes.byteLength < 18) throw new BadResultBytes('the stored result is not gzip');
  let inflated: Buffer;
  try {
    inflated = gunzipSized(bytes, { maxOutput: MAX_REPLY_INFLATED_BYTES, maxChunk: MAX_REPLY_INFLATED_BYTES + 1 });
  } catch (error) {
    throw new BadResultBytes(`the stored result does not inflate: ${(error as Error).message}`, { cause: error });
  }
  const json = isUtf8(inflated) ? inflated : Buffer.from(inflated.toString('utf8'));
  if (!isOneJsonObject(json)) throw new BadResultBytes('the stored result is not one JSON object');
  return json;
}

/** Results this large have memory of their own (Node's shared pool serves 4 kB at most), worth handing back. */
const RELEASED_BYTES = 1024 * 1024;

/**
 * Hands a result's memory back now, rather than when V8 next collects: a reader of 16 MiB
 * results outpaces the collector (measured: four audits of them held eleven at once, most of
 * them let go). Only a result of a megabyte or more, and only when nothing will read its bytes
 * again: its views are emptied.
 */
export function releaseResult(bytes: Uint8Array): void {
  const memory = bytes.buffer;
  if (memory instanceof ArrayBuffer && memory.byteLength >= RELEASED_BYTES && !memory.detached) memory.transfer(0);
}

/**
 * A stored cell with its result read back when asked, not before: its JSON as stored
 * (storedResultJson), for answers to write as it is; and the result itself, read against the
 * v1 schema only when something reads `lighthouse` (the budgets, a recomputation). /v1/audit
 * writes the bytes alone, and parsing every result to drop it was most of the cost of a read
 * (bench/results.md, read path). Each is kept once read; a reader of many cells that must not
 * hold them all reads them through the store's findSnapshotCells instead.
 */
export function withStoredResult<C extends object>(
  cell: C,
  gzipped: Uint8Array,
): C & { readonly lighthouse: LighthouseResult; readonly lighthouseJson: Buffer } {
  let json: Buffer | undefined;
  let lighthouse: LighthouseResult | undefined;
  const jsonOnce = () => (json ??= storedResultJson(gzipped));
  return Object.defineProperties(cell, {
    lighthouseJson: { get: jsonOnce, enumerable: true },
    lighthouse: {
      get: () => (lighthouse ??= lighthouseResultSchema.parse(JSON.parse(jsonOnce().toString('utf8')))),
      enumerable: true,
    },
  }) as C & { readonly lighthouse: LighthouseResult; readonly lighthouseJson: Buffer };
}

/**
 * A run's Lighthouse result as the gateway holds it between the reply and the store: the gzip
 * of its JSON, which is what both stores keep. An agent of v1.5 sends exactly these bytes, and
 * they are never inflated unless the run is a cell's representative one; a result that came as
 * an object (earlier agents, local mode) is compressed once, when it is stored. Inflated, the
 * result stays bytes: it is written into answers as such, never decoded to a string.
 */
export class ResultBytes {
  readonly #gzip: Buffer | null;
  readonly #result: LighthouseResult | null;
  /** Whether the bytes were seen to be one JSON object; then they are not scanned again. */
  #checked = false;

  private constructor(gzipped: Buffer | null, result: LighthouseResult | null) {
    this.#gzip = gzipped;
    this.#result = result;
  }

  static fromGzip(gzipped: Buffer): ResultBytes {
    return new ResultBytes(gzipped, null);
  }

  static fromResult(result: LighthouseResult): ResultBytes {
    return new ResultBytes(null, result);
  }

  /** The gzip of the result's JSON, as stored. */
  async gzip(): Promise<Buffer> {
    return this.#gzip ?? compressing(() => gzipAsync(Buffer.from(JSON.stringify(this.#result))));
  }

  /**
   * The result's JSON in UTF-8, checked to be one JSON object (it is written into answers as it
   * is: an agent's bytes must not be able to close the object and add keys of their own).
   */
  json(): Buffer {
    if (this.#result) return Buffer.from(JSON.stringify(this.#result));
    const kept = inflatedKept.get(this);
    if (kept) {
      inflatedKept.delete(this);
      return kept;
    }
    return this.#inflatedAndChecked();
  }

  /** Throws BadResultBytes unless the result is one JSON object; what is stored must be. */
  check(): void {
    if (this.#result || this.#checked) return;
    inflatedKept.set(this, this.#inflatedAndChecked());
  }

  #inflatedAndChecked(): Buffer {
    const bytes = inflateResult(this.#gzip!);
    if (this.#checked) return bytes;
    if (!isOneJsonObject(bytes)) throw new BadResultBytes('the result is not a JSON object in UTF-8, or not JSON');
    this.#checked = true;
    return bytes;
  }

  /** The result itself, read against the v1 schema. */
  read(): LighthouseResult {
    if (this.#result) return this.#result;
    const parsed = lighthouseResultSchema.safeParse(JSON.parse(this.json().toString('utf8')));
    if (!parsed.success)
      throw new BadResultBytes(
        `the result does not match the Lighthouse result schema: ${parsed.error.issues[0]?.message ?? ''}`.slice(
          0,
          300,
        ),
      );
    return parsed.data;
  }
}
