import { describe, expect, it } from 'vitest';
import { FLOW_LIMITS, FLOW_RUN_MAX_MS, flowRunTimeoutMs, flowSchema, resolvedFlow } from './flow.ts';

/** The demo site's journey, as the e2e test and the docs store it. */
const SHOP_FLOW = {
  steps: [
    { kind: 'navigate', name: 'product' },
    { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click', text: 'Add to cart' }] },
    { kind: 'snapshot', name: 'cart' },
  ],
};

/** The shop flow with its timespan's actions replaced. */
const withActions = (...actions: unknown[]) => ({
  steps: [SHOP_FLOW.steps[0], { kind: 'timespan', name: 'add to cart', actions }, SHOP_FLOW.steps[2]],
});

/** What an author reads when a flow is refused: every message. */
function refusals(flow: unknown): string[] {
  const parsed = flowSchema.safeParse(flow);
  if (parsed.success) throw new Error('the flow was accepted');
  return parsed.error.issues.map((issue) => issue.message);
}

describe('flowSchema', () => {
  it('accepts the demo flow as it is written', () => {
    expect(flowSchema.parse(SHOP_FLOW)).toEqual(SHOP_FLOW);
  });

  it('accepts every action an author may use', () => {
    const flow = withActions(
      { action: 'type', selector: '#q', value: 'socks' },
      { action: 'press', key: 'Enter' },
      { action: 'press', key: 'a', selector: '#q' },
      { action: 'scroll', y: 800 },
      { action: 'waitFor', text: 'Added', timeoutMs: 5_000 },
      { action: 'select', selector: '#size', value: 'M' },
    );
    expect(flowSchema.parse(flow)).toEqual(flow);
  });

  it('refuses an unknown action, naming the step and the action', () => {
    expect(refusals(withActions({ action: 'click', text: 'Add' }, { action: 'hover', selector: '#buy' }))).toEqual([
      'step 2 "add to cart": action 2: unknown action "hover"; known: click, type, press, scroll, waitFor, select',
    ]);
  });

  it('refuses an unknown kind of step, naming it', () => {
    expect(refusals({ steps: [SHOP_FLOW.steps[0], { kind: 'wait', name: 'pause' }] })).toEqual([
      'step 2 "pause": a step is of kind navigate, timespan or snapshot',
    ]);
  });

  it('refuses a selector over the bound and a text with control characters', () => {
    const long = '#'.padEnd(FLOW_LIMITS.selectorChars + 1, 'a');
    expect(refusals(withActions({ action: 'click', selector: long }))).toEqual([
      `step 2 "add to cart": action 1: a selector is at most ${FLOW_LIMITS.selectorChars} characters`,
    ]);
    expect(refusals(withActions({ action: 'click', text: 'Add\nto cart' }))).toEqual([
      'step 2 "add to cart": action 1: a text has no control characters',
    ]);
    expect(refusals(withActions({ action: 'click', selector: '#buy\u007f' }))).toEqual([
      'step 2 "add to cart": action 1: a selector has no control characters',
    ]);
  });

  it('refuses an action with both a selector and a text, and a click with neither', () => {
    expect(refusals(withActions({ action: 'click', selector: '#buy', text: 'Add to cart' }))).toEqual([
      'step 2 "add to cart": action 1 (click #buy): give a selector or a text, not both',
    ]);
    expect(refusals(withActions({ action: 'scroll', y: 10 }, { action: 'click' }))).toEqual([
      'step 2 "add to cart": action 2 (click): needs a selector or a text',
    ]);
  });

  it('refuses too many steps, too many actions in a timespan and too many in all', () => {
    const snapshots = Array.from({ length: FLOW_LIMITS.steps }, (_, i) => ({ kind: 'snapshot', name: `s${i}` }));
    expect(refusals({ steps: [SHOP_FLOW.steps[0], ...snapshots] })).toEqual([
      `a flow has at most ${FLOW_LIMITS.steps} steps`,
    ]);
    const clicks = (n: number) => Array.from({ length: n }, () => ({ action: 'click', text: 'Add to cart' }));
    expect(refusals(withActions(...clicks(FLOW_LIMITS.actionsPerTimespan + 1)))).toEqual([
      `step 2 "add to cart": a timespan has at most ${FLOW_LIMITS.actionsPerTimespan} actions`,
    ]);
    const timespans = [1, 2, 3].map((n) => ({
      kind: 'timespan',
      name: `buy ${n}`,
      actions: clicks(FLOW_LIMITS.actionsPerTimespan),
    }));
    expect(refusals({ steps: [SHOP_FLOW.steps[0], ...timespans] })).toEqual([
      `a flow has at most ${FLOW_LIMITS.actions} actions in all, not 60`,
    ]);
  });

  it("refuses a wait over its bound, and waits that add up past the flow's", () => {
    expect(refusals(withActions({ action: 'waitFor', text: 'Added', timeoutMs: FLOW_LIMITS.waitMs + 1 }))).toEqual([
      `step 2 "add to cart": action 1: a wait is at most ${FLOW_LIMITS.waitMs} ms`,
    ]);
    const waits = (n: number, timeoutMs?: number) =>
      Array.from({ length: n }, () => ({ action: 'waitFor', text: 'Added', ...(timeoutMs ? { timeoutMs } : {}) }));
    expect(flowSchema.safeParse(withActions(...waits(4, FLOW_LIMITS.waitMs))).success).toBe(true);
    expect(refusals(withActions(...waits(5, FLOW_LIMITS.waitMs)))).toEqual([
      `a flow's waits add up to at most ${FLOW_LIMITS.waitsMs} ms, not 75000`,
    ]);
    // A wait the author leaves unbounded counts at the default it waits.
    expect(refusals(withActions(...waits(7)))).toEqual([
      `a flow's waits add up to at most ${FLOW_LIMITS.waitsMs} ms, not 70000`,
    ]);
  });

  it('refuses two steps of the same name, whatever their case', () => {
    expect(refusals({ steps: [...SHOP_FLOW.steps, { kind: 'snapshot', name: 'Cart' }] })).toEqual([
      'step 4 "Cart": step 3 has the same name (names name budgets and trends)',
    ]);
  });

  it('refuses a flow that does not start with a navigation', () => {
    expect(refusals({ steps: SHOP_FLOW.steps.slice(1) })).toEqual([
      'step 1 "add to cart": a flow starts with a navigate step (its page is loaded first)',
    ]);
  });

  it('refuses a step name with a dot (it would not read back as a budget key)', () => {
    expect(refusals({ steps: [SHOP_FLOW.steps[0], { kind: 'snapshot', name: 'cart.v2' }] })).toEqual([
      'step 2 "cart.v2": a step name is letters, digits, spaces, _ and -, starting with a letter or digit',
    ]);
  });

  it('refuses a step name ending in a space (another step than one without, shown the same)', () => {
    expect(refusals({ steps: [...SHOP_FLOW.steps, { kind: 'snapshot', name: 'cart ' }] })).toEqual([
      'step 4 "cart ": a step name does not end with a space',
    ]);
  });
});

describe('resolvedFlow', () => {
  it("gives URL-less navigates the project's URL and leaves every other step as it is", () => {
    const flow = flowSchema.parse({
      steps: [
        ...SHOP_FLOW.steps,
        { kind: 'navigate', name: 'checkout', url: 'https://shop.example/checkout' },
        { kind: 'navigate', name: 'home' },
      ],
    });
    const resolved = resolvedFlow(flow, 'https://shop.example/product');
    expect(resolved.steps.map((step) => (step.kind === 'navigate' ? step.url : step.kind))).toEqual([
      'https://shop.example/product',
      'timespan',
      'snapshot',
      'https://shop.example/checkout',
      'https://shop.example/product',
    ]);
    expect(resolved.steps[1]).toBe(flow.steps[1]);
    expect(flow.steps[0]).toEqual({ kind: 'navigate', name: 'product' });
  });
});

describe('flowRunTimeoutMs', () => {
  it("allows a navigation's time per step, and the flow's waits", () => {
    const flow = flowSchema.parse(SHOP_FLOW);
    expect(flowRunTimeoutMs(flow, 60_000)).toBe(3 * 60_000 + FLOW_LIMITS.waitsMs);
    expect(flowRunTimeoutMs({ steps: flow.steps.slice(0, 1) }, 60_000)).toBe(60_000 + FLOW_LIMITS.waitsMs);
  });

  it("stays within the NATS reply window the shipped roles allow, and never below a navigation's time", () => {
    const flow = flowSchema.parse(SHOP_FLOW);
    // 3 × 120 s + 60 s would be 7 minutes: the agent's reply would come after the window closed.
    expect(flowRunTimeoutMs(flow, 120_000)).toBe(FLOW_RUN_MAX_MS);
    expect(flowRunTimeoutMs(flow, 270_000)).toBe(270_000);
  });
});
