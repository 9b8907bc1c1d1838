import { z } from 'zod';

/**
 * A user flow (a journey): the steps an agent takes through a page with Lighthouse's flow API,
 * each measured on its own — `navigate` loads a URL (a navigation report), `timespan` records
 * what a group of actions does to the page (INP, TBT, CLS), `snapshot` audits the page as it
 * stands (accessibility, best practices, SEO). Actions are the browser's own input (clicks,
 * keys, wheel) on elements found by CSS or by their text: nothing in a flow is page JavaScript
 * its author wrote, since the agent runs it in a Chrome that reaches other operators' networks.
 */
export const FLOW_LIMITS = {
  steps: 10,
  actionsPerTimespan: 20,
  actions: 50,
  selectorChars: 300,
  valueChars: 1_000,
  nameChars: 40,
  /** What one `waitFor` may wait; the whole of a flow's waits are bounded by `waitsMs`. */
  waitMs: 15_000,
  waitsMs: 60_000,
} as const;

/** Step names become budget keys (`add to cart.inp`) and overview `step` fields: no dot, nothing odd. */
const STEP_NAME = /^[A-Za-z0-9][A-Za-z0-9 _-]*$/;
const stepName = z
  .string({ error: 'a step needs a name' })
  .max(FLOW_LIMITS.nameChars, `a step name is at most ${FLOW_LIMITS.nameChars} characters`)
  .regex(STEP_NAME, 'a step name is letters, digits, spaces, _ and -, starting with a letter or digit')
  // "cart " would be another step than "cart", shown the same in reports and budgets.
  .regex(/[^ ]$/, 'a step name does not end with a space');

/** Whether `text` is a step name a flow may have: what a step-scoped budget key must name. */
export const isStepName = (text: string): boolean => stepName.safeParse(text).success;

// eslint-disable-next-line no-control-regex -- the point is to refuse them
const NO_CONTROL = /^[^\x00-\x1f\x7f]*$/;

/** An element: by CSS selector, or by the text it shows (Puppeteer's text query, no script). */
const target = {
  selector: z
    .string()
    .min(1, 'a selector is not empty')
    .max(FLOW_LIMITS.selectorChars, `a selector is at most ${FLOW_LIMITS.selectorChars} characters`)
    .regex(NO_CONTROL, 'a selector has no control characters')
    .optional(),
  text: z
    .string()
    .min(1, 'a text is not empty')
    .max(FLOW_LIMITS.selectorChars, `a text is at most ${FLOW_LIMITS.selectorChars} characters`)
    .regex(NO_CONTROL, 'a text has no control characters')
    .optional(),
};

/** Keys `press` may send: a name of Puppeteer's key table (Enter, Tab, ArrowDown…) or one character. */
const keyName = z
  .string()
  .regex(
    /^(?:[A-Za-z][A-Za-z0-9]{1,24}|[\x21-\x7e])$/,
    'a key is a key name (Enter, Tab, ArrowDown…) or one character',
  );

const actionSchema = z.discriminatedUnion(
  'action',
  [
    z.strictObject({ action: z.literal('click'), ...target }),
    z.strictObject({
      action: z.literal('type'),
      ...target,
      value: z.string().max(FLOW_LIMITS.valueChars, `a value is at most ${FLOW_LIMITS.valueChars} characters`),
    }),
    z.strictObject({ action: z.literal('press'), key: keyName, ...target }),
    z.strictObject({
      action: z.literal('scroll'),
      ...target,
      /** Pixels the wheel moves the page (without a target); positive: down. */
      y: z.number().int().min(-100_000).max(100_000).optional(),
    }),
    z.strictObject({
      action: z.literal('waitFor'),
      ...target,
      timeoutMs: z
        .number()
        .int()
        .positive()
        .max(FLOW_LIMITS.waitMs, `a wait is at most ${FLOW_LIMITS.waitMs} ms`)
        .optional(),
    }),
    z.strictObject({
      action: z.literal('select'),
      selector: target.selector.unwrap(),
      value: z.string().max(FLOW_LIMITS.valueChars),
    }),
  ],
  {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? `unknown action ${JSON.stringify(String((issue.input as { action?: unknown })?.action ?? '')).slice(0, 60)}; known: click, type, press, scroll, waitFor, select`
        : undefined,
  },
);
export type FlowAction = z.infer<typeof actionSchema>;

/** Which actions find an element, and whether they must. */
const TARGETS: Record<FlowAction['action'], 'required' | 'optional'> = {
  click: 'required',
  type: 'required',
  press: 'optional',
  scroll: 'optional',
  waitFor: 'required',
  select: 'required',
};

const stepSchema = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({
      kind: z.literal('navigate'),
      name: stepName,
      /** Absent: the project's own URL. */
      url: z
        .url({ protocol: /^https?$/, error: 'a navigate url is an http(s) URL' })
        .max(2_048)
        .optional(),
    }),
    z.strictObject({
      kind: z.literal('timespan'),
      name: stepName,
      actions: z
        .array(actionSchema)
        .min(1, 'a timespan has at least one action')
        .max(FLOW_LIMITS.actionsPerTimespan, `a timespan has at most ${FLOW_LIMITS.actionsPerTimespan} actions`),
    }),
    z.strictObject({ kind: z.literal('snapshot'), name: stepName }),
  ],
  {
    error: (issue) => (issue.code === 'invalid_union' ? 'a step is of kind navigate, timespan or snapshot' : undefined),
  },
);
export type FlowStep = z.infer<typeof stepSchema>;
export type FlowStepKind = FlowStep['kind'];
export const FLOW_STEP_KINDS = ['navigate', 'timespan', 'snapshot'] as const satisfies readonly FlowStepKind[];

/** How a step is named in messages: its number and name, which users see in the editor and in failures. */
export const describeStep = (step: Pick<FlowStep, 'name'>, index: number): string => `step ${index + 1} "${step.name}"`;

/** How an action is named in messages: what it does and where, never the value it types. */
export function describeAction(action: FlowAction, index: number): string {
  const where =
    'selector' in action && action.selector !== undefined
      ? ` ${action.selector}`
      : 'text' in action && action.text !== undefined
        ? ` text "${action.text}"`
        : '';
  return `action ${index + 1} (${action.action}${action.action === 'press' ? ` ${action.key}` : ''}${where})`;
}

/**
 * A flow as a project keeps it and a job carries it. Refusals name the step (and the action)
 * they are about, as `step 2 "add to cart": …`, since that is what the author looks for.
 */
export const flowSchema = z
  .strictObject({
    steps: z
      .array(z.unknown())
      .min(1, 'a flow has at least one step')
      .max(FLOW_LIMITS.steps, `a flow has at most ${FLOW_LIMITS.steps} steps`),
  })
  .transform((flow, ctx) => {
    const steps: FlowStep[] = [];
    for (const [index, raw] of flow.steps.entries()) {
      const parsed = stepSchema.safeParse(raw);
      if (!parsed.success) {
        for (const issue of parsed.error.issues.slice(0, 3))
          ctx.addIssue({
            code: 'custom',
            path: ['steps', index, ...issue.path],
            message: stepMessage(raw, index, issue),
          });
        continue;
      }
      steps.push(parsed.data);
    }
    if (steps.length !== flow.steps.length) return z.NEVER;
    for (const issue of flowIssues(steps)) ctx.addIssue({ code: 'custom', ...issue });
    return { steps };
  });
export type Flow = z.output<typeof flowSchema>;

/** A flow's shape as answers carry it (what `flowSchema` gives once it has checked one). */
export const flowShapeSchema = z.object({ steps: z.array(stepSchema) }).meta({ id: 'Flow' });

function stepMessage(raw: unknown, index: number, issue: z.core.$ZodIssue): string {
  const name = (raw as { name?: unknown } | null)?.name;
  const step =
    typeof name === 'string' && name.length <= FLOW_LIMITS.nameChars
      ? describeStep({ name }, index)
      : `step ${index + 1}`;
  const [, actionIndex] = issue.path;
  const within = issue.path[0] === 'actions' && typeof actionIndex === 'number' ? `action ${actionIndex + 1}: ` : '';
  return `${step}: ${within}${issue.message}`;
}

/** What a flow's steps must be together: a navigation first, unique names, targets, bounded actions and waits. */
function flowIssues(steps: readonly FlowStep[]): Array<{ path: Array<string | number>; message: string }> {
  const issues: Array<{ path: Array<string | number>; message: string }> = [];
  if (steps[0]!.kind !== 'navigate')
    issues.push({
      path: ['steps', 0],
      message: `${describeStep(steps[0]!, 0)}: a flow starts with a navigate step (its page is loaded first)`,
    });
  const seen = new Map<string, number>();
  let actions = 0;
  let waits = 0;
  steps.forEach((step, index) => {
    const key = step.name.toLowerCase();
    const earlier = seen.get(key);
    if (earlier !== undefined)
      issues.push({
        path: ['steps', index, 'name'],
        message: `${describeStep(step, index)}: step ${earlier + 1} has the same name (names name budgets and trends)`,
      });
    seen.set(key, index);
    if (step.kind !== 'timespan') return;
    step.actions.forEach((action, a) => {
      actions++;
      const hasSelector = 'selector' in action && action.selector !== undefined;
      const hasText = 'text' in action && action.text !== undefined;
      if (hasSelector && hasText)
        issues.push({
          path: ['steps', index, 'actions', a],
          message: `${describeStep(step, index)}: ${describeAction(action, a)}: give a selector or a text, not both`,
        });
      else if (TARGETS[action.action] === 'required' && !hasSelector && !hasText)
        issues.push({
          path: ['steps', index, 'actions', a],
          message: `${describeStep(step, index)}: ${describeAction(action, a)}: needs a selector or a text`,
        });
      if (action.action === 'waitFor') waits += action.timeoutMs ?? DEFAULT_WAIT_MS;
    });
  });
  if (actions > FLOW_LIMITS.actions)
    issues.push({
      path: ['steps'],
      message: `a flow has at most ${FLOW_LIMITS.actions} actions in all, not ${actions}`,
    });
  if (waits > FLOW_LIMITS.waitsMs)
    issues.push({
      path: ['steps'],
      message: `a flow's waits add up to at most ${FLOW_LIMITS.waitsMs} ms, not ${waits}`,
    });
  return issues;
}

/** How long a `waitFor` (and any action's look for its element) waits when the flow says nothing. */
export const DEFAULT_WAIT_MS = 10_000;

/** The flow with every navigate's URL made explicit (a step without one loads the project's page). */
export function resolvedFlow(flow: Flow, projectUrl: string): Flow {
  return {
    steps: flow.steps.map((step) => (step.kind === 'navigate' && !step.url ? { ...step, url: projectUrl } : step)),
  };
}

/** The URLs a flow loads, with their steps: what a gateway checks against the address rules. */
export const flowNavigations = (flow: Flow): Array<{ index: number; step: FlowStep; url: string }> =>
  flow.steps.flatMap((step, index) => (step.kind === 'navigate' && step.url ? [{ index, step, url: step.url }] : []));

/**
 * The longest a flow's run may take, whatever its steps: the gateway waits 30 s more for its
 * reply, and the shipped NATS roles let an agent answer a job for 5 minutes (RUN_TIMEOUT_MS is
 * held to the same bound). A flow's step takes 10–30 s on the machines agents run on.
 */
export const FLOW_RUN_MAX_MS = 270_000;

/**
 * How long a flow's run may take: a navigation's time for each step (a step is a Lighthouse pass
 * at most as long as a page load), plus its waits, within FLOW_RUN_MAX_MS (never below a
 * navigation's own time).
 */
export const flowRunTimeoutMs = (flow: Flow, runTimeoutMs: number): number =>
  Math.max(runTimeoutMs, Math.min(FLOW_RUN_MAX_MS, runTimeoutMs * flow.steps.length + FLOW_LIMITS.waitsMs));
