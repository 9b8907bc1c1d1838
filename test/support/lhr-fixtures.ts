import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lighthouseResultSchema, type Device, type LighthouseResult } from '@perfwatch/common';

const dir = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/lhr');

/**
 * Real Lighthouse 13 results of the fixture site (scripts/capture-lhr-fixtures.ts), three per
 * device. Each call returns a fresh copy a test may change.
 */
export function loadLhr(device: Device, run: 1 | 2 | 3): LighthouseResult {
  return lighthouseResultSchema.parse(JSON.parse(readFileSync(join(dir, `${device}-${run}.json`), 'utf8')));
}

export function loadLhrs(device: Device): LighthouseResult[] {
  return [loadLhr(device, 1), loadLhr(device, 2), loadLhr(device, 3)];
}

/**
 * A real result with its audit details, i18n table and timings dropped (~40 kB instead of
 * ~180 kB): for benchmarks about dispatch and storage, not about result size.
 */
export function loadLeanLhr(device: Device): LighthouseResult {
  const lhr = loadLhr(device, 1);
  for (const audit of Object.values(lhr.audits)) delete audit.details;
  delete lhr['i18n'];
  delete lhr['timing'];
  return lighthouseResultSchema.parse(lhr);
}

/**
 * The demo shop's flow, as a user writes it: its product page, a click on "Add to cart", the
 * cart. What the flow fixture below was captured with, and what tests set on projects.
 */
export const CART_FLOW = {
  steps: [
    { kind: 'navigate', name: 'product' },
    { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click', text: 'Add to cart' }] },
    { kind: 'snapshot', name: 'cart' },
  ],
};

/** One flow step's result as the agent sends it: its name, its kind and its Lighthouse result. */
export interface FlowStepFixture {
  name: string;
  kind: 'navigate' | 'timespan' | 'snapshot';
  lhr: LighthouseResult;
}

/**
 * A real Lighthouse 13 user flow of the fixture site on desktop (scripts/capture-flow-fixture.ts):
 * `product` (a navigation of cart.html?work=120), `add to cart` (a timespan clicking the button,
 * whose handler holds the thread 120 ms), `cart` (a snapshot). A fresh copy each call.
 */
export function loadFlowSteps(): FlowStepFixture[] {
  const { steps } = JSON.parse(readFileSync(join(dir, 'flow-desktop.json'), 'utf8')) as {
    steps: Array<{ name: string; kind: FlowStepFixture['kind']; lhr: unknown }>;
  };
  return steps.map((step) => ({ ...step, lhr: lighthouseResultSchema.parse(step.lhr) }));
}
