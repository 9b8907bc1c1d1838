import { describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { loadFlowSteps } from '../../test/support/lhr-fixtures.ts';
import { ReplyRefused, replyMismatch, type AuditJob, type AuditReply, type ReceivedReply } from './audit-messages.ts';
import { decodeReply, encodeReply, encodeReplyParts, receiveReply } from './audit-codec.ts';
import { flowSchema, resolvedFlow } from './flow.ts';
import { digestRun } from './run-digest.ts';

// A flow's run on the wire (v1.8): its steps' digests in the first part, each step's result
// after it as Perfwatch-Step-Parts says, bound to the job's flow by name and kind, in order.

const steps = loadFlowSteps();
const flow = resolvedFlow(
  flowSchema.parse({
    steps: [
      { kind: 'navigate', name: 'product' },
      { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click', text: 'Add to cart' }] },
      { kind: 'snapshot', name: 'cart' },
    ],
  }),
  'http://fixture.test/cart.html?work=120',
);
const job: AuditJob = {
  jobId: 'u.desktop.london.0',
  updateId: 'u',
  url: 'http://fixture.test/cart.html?work=120',
  device: 'desktop',
  location: 'london',
  runIndex: 0,
  timeoutMs: 240_000,
  flow,
};
const reply: Extract<AuditReply, { ok: true }> = {
  ok: true,
  result: {
    jobId: job.jobId,
    agentId: 'a',
    location: 'london',
    device: 'desktop',
    runIndex: 0,
    startedAt: new Date().toISOString(),
    lighthouseMs: 9000,
    lhr: steps[0]!.lhr,
    steps,
  },
};
const layout = (parts: number, stepParts: string | undefined) => ({
  contentEncoding: 'gzip',
  parts: String(parts),
  stepParts,
});

/** What a gateway makes of the bytes: the reply, or why it refused them. */
const received = (data: Uint8Array, parts: number, stepParts: string | undefined, maxBytes?: number) =>
  receiveReply(data, layout(parts, stepParts), maxBytes === undefined ? {} : { maxBytes }).then(
    (answer) => answer,
    (error: unknown) => {
      if (error instanceof ReplyRefused) return error.message;
      throw error;
    },
  );

describe("a flow's reply in two parts (v1.8)", () => {
  it("carries each step's digest first and each step's result as the gzip sent, in the flow's order", async () => {
    const { data, parts, stepParts } = await encodeReplyParts(reply);
    const lengths = stepParts!.split(',').map(Number);
    expect(lengths).toHaveLength(3);
    const answer = await received(data, parts, stepParts);
    if (typeof answer === 'string' || !answer.ok || !('stepGzips' in answer)) throw new Error(`not read: ${answer}`);
    // The bytes as the agent sent them: a store keeps them without inflating or compressing again.
    let offset = parts;
    for (const [i, gzip] of answer.stepGzips!.entries()) {
      expect(gzip.equals(data.subarray(offset, offset + lengths[i]!))).toBe(true);
      expect(JSON.parse(gunzipSync(gzip).toString('utf8'))).toEqual(steps[i]!.lhr);
      offset += lengths[i]!;
    }
    expect(answer.lighthouseGzip.equals(answer.stepGzips![0]!)).toBe(true);
    expect(answer.result.steps!.map(({ name, kind }) => `${kind} ${name}`)).toEqual([
      'navigate product',
      'timespan add to cart',
      'snapshot cart',
    ]);
    const digests = answer.result.steps!.map((step) => step.digest);
    expect(digests).toEqual(steps.map((step) => JSON.parse(JSON.stringify(digestRun(step.lhr)))));
    expect(answer.result.digest).toEqual(digests[0]);
    expect(digests[1]!.lhr.audits['interaction-to-next-paint']?.numericValue).toBeCloseTo(134.6, 1);
    expect(replyMismatch(job, answer)).toBeNull();
  });

  it('reads a whole reply with its steps, as agents without two parts send it', async () => {
    const answer = await decodeReply(await encodeReply(reply), 'gzip');
    if (!answer.ok) throw new Error('a failure');
    expect(answer.result.steps!.map((step) => step.lhr)).toEqual(steps.map((step) => step.lhr));
    expect(replyMismatch(job, answer)).toBeNull();
  });

  it('refuses step parts that do not add up to the rest of the reply, or do not count its steps', async () => {
    const { data, parts, stepParts } = await encodeReplyParts(reply);
    const [a, b, c] = stepParts!.split(',').map(Number) as [number, number, number];
    expect(await received(data, parts, `${a},${b},${c + 1}`)).toBe("the reply's step parts do not add up");
    expect(await received(data, parts, `${a},${b}`)).toBe("the reply's steps do not match its step parts");
    expect(await received(data, parts, `${a},${b + c}`)).toBe("the reply's steps do not match its step parts");
    expect(await received(data, parts, `${a},${b},${c},0`)).toBe("the reply's steps do not match its step parts");
    for (const header of ['', `${a};${b};${c}`, `${a},-${b},${c}`, `${a},${b},${c},`])
      expect(await received(data, parts, header)).toBe("the reply's steps do not match its step parts");
    // Lengths that add up but cut the steps elsewhere: a piece is not gzip, or its trailer is not one.
    expect(await received(data, parts, `${a - 20},${b + 20},${c}`)).toMatch(/^the reply's result inflates past/);
    expect(await received(data, parts, `${a + 20},${b - 20},${c}`)).toMatch(/^the reply's result (inflates|is not)/);
  });

  it('refuses a step part that is not gzip, over the bound, or whose trailer claims past it', async () => {
    const { data, parts, stepParts } = await encodeReplyParts(reply);
    const [a, b] = stepParts!.split(',').map(Number) as [number, number, number];
    const notGzip = Buffer.from(data);
    notGzip.fill(0x7b, parts + a, parts + a + 3);
    expect(await received(notGzip, parts, stepParts)).toBe("the reply's result is not gzip");
    // A bound below the navigation's gzip (the largest), above the others' and the digest's.
    expect(Math.max(parts, b, ...stepParts!.split(',').slice(2).map(Number))).toBeLessThan(a - 1);
    expect(await received(data, parts, stepParts, a - 1)).toBe(`the reply's result is over ${a - 1} bytes`);
    const bomb = Buffer.from(data);
    bomb.writeUInt32LE(0xffffffff, parts + a + b - 4);
    expect(await received(bomb, parts, stepParts)).toMatch(/^the reply's result inflates past/);
  });

  it("refuses a flow's digest without Perfwatch-Step-Parts, and step parts for a navigation", async () => {
    const { data, parts } = await encodeReplyParts(reply);
    expect(await received(data, parts, undefined)).toBe('flow steps without their results (Perfwatch-Step-Parts)');
    const navigation = await encodeReplyParts({ ok: true, result: { ...reply.result, steps: undefined } });
    const rest = String(navigation.data.byteLength - navigation.parts);
    expect(await received(navigation.data, navigation.parts, rest)).toBe(
      "the reply's steps do not match its step parts",
    );
  });
});

describe('a reply bound to its job’s flow', () => {
  const flowRun = async (changed: typeof steps = steps): Promise<ReceivedReply> => {
    const { data, parts, stepParts } = await encodeReplyParts({
      ok: true,
      result: { ...reply.result, steps: changed },
    });
    return receiveReply(data, layout(parts, stepParts));
  };

  it('refuses a navigation for a flow job, and a flow for a navigation job', async () => {
    const { steps: _steps, ...navigation } = reply.result;
    const { data, parts } = await encodeReplyParts({ ok: true, result: navigation });
    const navigationReply = await receiveReply(data, layout(parts, undefined));
    expect(replyMismatch(job, navigationReply)).toBe(
      'a navigation for a job that is a flow (the agent runs no flows: v1.8)',
    );
    const { flow: _flow, ...navigationJob } = job;
    expect(replyMismatch(navigationJob, await flowRun())).toBe('flow steps for a job that has no flow');
    expect(replyMismatch(navigationJob, navigationReply)).toBeNull();
  });

  it('refuses steps renamed, of another kind, reordered, or of another count, naming the first that differs', async () => {
    const [product, addToCart, cart] = steps as [(typeof steps)[0], (typeof steps)[0], (typeof steps)[0]];
    expect(replyMismatch(job, await flowRun([product, { ...addToCart, name: 'add to basket' }, cart]))).toBe(
      'flow step 2 is timespan "add to basket", not timespan "add to cart"',
    );
    // Names bind exactly: a budget of `add to cart.inp` reads the step by the flow's own name.
    expect(replyMismatch(job, await flowRun([product, { ...addToCart, name: 'Add to cart' }, cart]))).toMatch(
      /^flow step 2 is timespan "Add to cart"/,
    );
    expect(replyMismatch(job, await flowRun([product, { ...addToCart, kind: 'snapshot' }, cart]))).toBe(
      'flow step 2 is snapshot "add to cart", not timespan "add to cart"',
    );
    expect(replyMismatch(job, await flowRun([product, cart, addToCart]))).toBe(
      'flow step 2 is snapshot "cart", not timespan "add to cart"',
    );
    expect(replyMismatch(job, await flowRun([product, addToCart]))).toBe('2 flow steps, not 3');
    expect(replyMismatch(job, await flowRun([product, addToCart, cart, { ...cart, name: 'again' }]))).toBe(
      '4 flow steps, not 3',
    );
  });
});
