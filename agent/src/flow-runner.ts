import type { startFlow as startFlowType } from 'lighthouse';
import puppeteer, { type BrowserContext, type Page } from 'puppeteer-core';
import {
  describeAction,
  describeStep,
  TargetRefused,
  type Device,
  type Flow,
  type FlowStep,
  type TargetGuard,
} from '@perfwatch/common';
import { settle, takeAction } from './flow-actions.ts';
import { RunFailure } from './run-failure.ts';

/** One step's result as Lighthouse made it, under the flow's name and kind for it. */
export interface FlowStepResult {
  name: string;
  kind: FlowStep['kind'];
  lhr: unknown;
}

export interface FlowRunInput {
  /** The DevTools port of the run's Chrome. */
  port: number;
  /** A tab signed in to the page (authenticated-page.ts); absent: a fresh tab is opened. */
  page?: Page;
  flow: Flow;
  device: Device;
  /** The CPU slowdown of the run (1 on desktop): navigations simulate it, timespans get it from DevTools. */
  cpuMultiplier: number;
  /** Checks each navigate step's host before Chrome is sent there. */
  guard?: TargetGuard;
  /** Set once the flow is under way, so a run given up on can be stopped (its tab closed). */
  onStarted?: (stop: () => Promise<void>) => void;
}

export interface FlowRunOutput {
  steps: FlowStepResult[];
  /** The first navigation's DevTools trace (the run's artifacts are that step's). */
  trace: unknown;
}

/**
 * A flow through Lighthouse's own flow API (startFlow: navigate, startTimespan/endTimespan,
 * snapshot), in the run's Chrome and so behind its guard proxy. A step that cannot be taken ends
 * the run with FLOW_STEP_FAILED naming the step and, within a timespan, the action.
 */
export async function runFlow(input: FlowRunInput): Promise<FlowRunOutput> {
  const { startFlow, desktopConfig } = await import('lighthouse');
  const own = input.page ? null : await puppeteer.connect({ browserURL: `http://127.0.0.1:${input.port}` });
  let context: BrowserContext | undefined;
  try {
    // A flow types into pages, and so may sign in: its cookies and storage live in a context of
    // its own, closed after it, not in the profile the Chrome's next runs (any user's) share.
    // (A signed-in tab's Chrome is retired after the run.)
    context = await own?.createBrowserContext();
    const page = input.page ?? (await context!.newPage());
    input.onStarted?.(() => page.close().catch(() => undefined));
    const flow = await startFlow(page as never, {
      ...(input.device === 'desktop' ? { config: desktopConfig } : {}),
      flags: {
        // The full-page screenshot costs about 1.5 s a step and is never stored.
        disableFullPageScreenshot: true,
        ...(input.device === 'desktop' ? {} : { throttling: { cpuSlowdownMultiplier: input.cpuMultiplier } }),
      },
    });
    for (const [index, step] of input.flow.steps.entries()) await takeStep(flow, page, step, index, input);
    const result = await flow.createFlowResult();
    const navigation = flow.createArtifactsJson().gatherSteps[0]?.artifacts as { Trace?: unknown } | undefined;
    const steps = result.steps.map(({ lhr }, index) => {
      const step = input.flow.steps[index]!;
      refuseFailedNavigation(step, index, lhr);
      return { name: step.name, kind: step.kind, lhr: lhr as unknown };
    });
    if (steps.length !== input.flow.steps.length)
      throw new RunFailure(
        'LIGHTHOUSE_FAILED',
        `Lighthouse returned ${steps.length} steps of ${input.flow.steps.length}`,
        true,
      );
    return { steps, trace: navigation?.Trace };
  } finally {
    await context?.close().catch(() => undefined);
    await own?.disconnect().catch(() => undefined);
  }
}

type UserFlow = Awaited<ReturnType<typeof startFlowType>>;

async function takeStep(flow: UserFlow, page: Page, step: FlowStep, index: number, input: FlowRunInput): Promise<void> {
  const named = describeStep(step, index);
  switch (step.kind) {
    case 'navigate':
      await guardTarget(named, step.url!, input.guard);
      await failingAs(named, () => flow.navigate(step.url!, { name: step.name }));
      return;
    case 'snapshot':
      await failingAs(named, () => flow.snapshot({ name: step.name }));
      return;
    case 'timespan': {
      // Lighthouse cannot simulate a timespan (it records what happens): a mobile one gets the
      // run's CPU slowdown from DevTools instead, with the network as it is.
      const throttled =
        input.device === 'desktop'
          ? {}
          : {
              throttlingMethod: 'devtools' as const,
              throttling: {
                cpuSlowdownMultiplier: input.cpuMultiplier,
                requestLatencyMs: 0,
                downloadThroughputKbps: 0,
                uploadThroughputKbps: 0,
              },
            };
      await failingAs(named, () => flow.startTimespan({ name: step.name, ...throttled }));
      for (const [a, action] of step.actions.entries()) {
        try {
          await takeAction(page, action);
        } catch (error) {
          const reason = (error as Error).name === 'TimeoutError' ? 'timed out' : `failed: ${firstLine(error)}`;
          throw new RunFailure('FLOW_STEP_FAILED', `${named}: ${describeAction(action, a)} ${reason}`, false, {
            cause: error,
          });
        }
      }
      await settle(page).catch(() => undefined);
      await failingAs(named, () => flow.endTimespan());
      return;
    }
  }
}

/** A step's own failure (Lighthouse's, or the page's), named by the step. */
async function failingAs(named: string, take: () => Promise<unknown>): Promise<void> {
  try {
    await take();
  } catch (error) {
    if (error instanceof RunFailure) throw error;
    throw new RunFailure('FLOW_STEP_FAILED', `${named} failed: ${firstLine(error)}`, false, { cause: error });
  }
}

async function guardTarget(named: string, url: string, guard: TargetGuard | undefined): Promise<void> {
  if (!guard) return;
  try {
    await guard.resolve(new URL(url).hostname);
  } catch (error) {
    if (error instanceof TargetRefused)
      throw new RunFailure(
        error.kind === 'unresolvable' ? 'FLOW_STEP_FAILED' : 'TARGET_REFUSED',
        `${named}: ${error.message}`,
        false,
      );
    throw error;
  }
}

/** A later navigation that did not load fails the run as its first would, named by its step. */
function refuseFailedNavigation(
  step: FlowStep,
  index: number,
  lhr: { runtimeError?: { code: string; message: string } },
) {
  if (index === 0 || step.kind !== 'navigate' || !lhr.runtimeError) return;
  throw new RunFailure(
    'FLOW_STEP_FAILED',
    `${describeStep(step, index)}: the page did not load (${lhr.runtimeError.code}: ${lhr.runtimeError.message})`,
    false,
  );
}

/** Puppeteer's and Lighthouse's messages can run to a stack of lines; the first says what went wrong. */
const firstLine = (error: unknown): string =>
  String((error as Error).message ?? error)
    .split('\n')[0]!
    .slice(0, 300);
