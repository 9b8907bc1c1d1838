import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import pLimit from 'p-limit';
import { isOneJsonObject } from './json-object-text.ts';
import { lighthouseResultSchema, MAX_REPLY_INFLATED_BYTES, type LighthouseResult } from '@perfwatch/common';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * Inflations (and compressions) under way at once, across all updates. Each holds a zlib
 * context and its output from the moment it is asked for, queued or not: a thousand updates
 * checking their cells' results together piled up over a gigabyte of them (bench/results.md,
 * dispatch at scale).
 */
const inflating = pLimit(availableParallelism());

/** A run's result that does not hold together: not gzip, past the bound, not one JSON object. */
export class BadResultBytes extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BadResultBytes';
  }
}

/**
 * A run's Lighthouse result as the gateway holds it between the reply and the store: the gzip
 * of its JSON, which is what both stores keep. An agent of v1.5 sends exactly these bytes, and
 * they are never inflated unless the run is a cell's representative one; a result that came as
 * an object (earlier agents, local mode) is compressed once, when it is stored.
 */
export class ResultBytes {
  readonly #gzip: Buffer | null;
  readonly #result: LighthouseResult | null;
  /** Whether the bytes were seen to be one JSON object; then they are not parsed again. */
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
    return this.#gzip ?? inflating(() => gzipAsync(Buffer.from(JSON.stringify(this.#result))));
  }

  /**
   * The result's JSON text, checked to be one JSON object (it is written into answers as it is:
   * an agent's bytes must not be able to close the object and add keys of their own).
   */
  async json(): Promise<string> {
    if (this.#result) return JSON.stringify(this.#result);
    const text = (await this.#inflated()).toString('utf8');
    if (this.#checked) return text;
    if (!isOneJsonObject(text)) throw new BadResultBytes('the result is not a JSON object, or not JSON');
    this.#checked = true;
    return text;
  }

  /** Throws BadResultBytes unless the result is one JSON object; what is stored must be. */
  async check(): Promise<void> {
    if (!this.#result && !this.#checked) await this.json();
  }

  /** The result itself, read against the v1 schema. */
  async read(): Promise<LighthouseResult> {
    if (this.#result) return this.#result;
    const parsed = lighthouseResultSchema.safeParse(JSON.parse(await this.json()));
    if (!parsed.success) throw new BadResultBytes(`the result does not match the Lighthouse result schema: ${parsed.error.issues[0]?.message ?? ''}`.slice(0, 300));
    return parsed.data;
  }

  async #inflated(): Promise<Buffer> {
    try {
      return await inflating(() => gunzipAsync(this.#gzip!, { maxOutputLength: MAX_REPLY_INFLATED_BYTES }));
    } catch (error) {
      throw new BadResultBytes(`the result does not inflate: ${(error as Error).message}`, { cause: error });
    }
  }
}
