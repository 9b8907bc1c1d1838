import { z } from 'zod';
import type { AuditResult } from './audit-result.ts';
import { DEVICES, LOCATIONS, type Device, type Location } from './ids.ts';
import { isStepName } from './flow.ts';
import { withoutPrototypeKeys } from './own-keys.ts';

/**
 * What a budget can bound. Category scores (0–100) are floors; metrics are ceilings in the
 * unit Lighthouse reports them (milliseconds, bytes, or unitless for CLS).
 */
export const BUDGET_KEYS = {
  performance: { kind: 'score', category: 'performance', label: 'performance score' },
  accessibility: { kind: 'score', category: 'accessibility', label: 'accessibility score' },
  'best-practices': { kind: 'score', category: 'best-practices', label: 'best-practices score' },
  seo: { kind: 'score', category: 'seo', label: 'SEO score' },
  lcp: { kind: 'metric', audit: 'largest-contentful-paint', label: 'LCP', unit: 'ms' },
  fcp: { kind: 'metric', audit: 'first-contentful-paint', label: 'FCP', unit: 'ms' },
  tbt: { kind: 'metric', audit: 'total-blocking-time', label: 'TBT', unit: 'ms' },
  cls: { kind: 'metric', audit: 'cumulative-layout-shift', label: 'CLS', unit: '' },
  si: { kind: 'metric', audit: 'speed-index', label: 'Speed Index', unit: 'ms' },
  tti: { kind: 'metric', audit: 'interactive', label: 'TTI', unit: 'ms' },
  ttfb: { kind: 'metric', audit: 'server-response-time', label: 'server response time', unit: 'ms' },
  bytes: { kind: 'metric', audit: 'total-byte-weight', label: 'total bytes', unit: 'B' },
  /** Measured in a flow's timespan steps only (a navigation has no interaction). */
  inp: { kind: 'metric', audit: 'interaction-to-next-paint', label: 'INP', unit: 'ms' },
} as const;
export type BudgetKey = keyof typeof BUDGET_KEYS;
const budgetKeyNames = Object.keys(BUDGET_KEYS) as [BudgetKey, ...BudgetKey[]];
const budgetKeySet: ReadonlySet<string> = new Set(budgetKeyNames);
/** Whether `key` is a budget key of perfwatch's own (never one a plain object inherits). */
const isBudgetKey = (key: string): key is BudgetKey => budgetKeySet.has(key);
export const budgetKeyList = budgetKeyNames.join(', ');

/**
 * A budget's key: a key of BUDGET_KEYS for a project's page (a flow's first step), or
 * `<step>.<key>` for a step of its flow (`add to cart.inp`, `checkout.cls`).
 */
export interface ScopedBudgetKey {
  step?: string;
  key: BudgetKey;
}

/** Keys measured only in a flow's timespans: unscoped, they would never be measured. */
const STEP_ONLY: ReadonlySet<BudgetKey> = new Set(['inp']);

/** `lcp`, `checkout.inp`: the key and its step, or why it is not a budget key. */
function splitBudgetKey(text: string): ScopedBudgetKey | { error: string } {
  const dot = text.lastIndexOf('.');
  const step = dot === -1 ? undefined : text.slice(0, dot);
  const key = dot === -1 ? text : text.slice(dot + 1);
  if (!isBudgetKey(key)) return { error: `unknown budget key "${key.slice(0, 64)}"; known: ${budgetKeyList}` };
  // The flow's own rule for its names: a key no step could have is refused, not kept unmeasured.
  if (step !== undefined && !isStepName(step))
    return { error: `"${text.slice(0, 100)}": a step name is letters, digits, spaces, _ and -, up to 40` };
  if (step === undefined && STEP_ONLY.has(key))
    return { error: `${key} is measured in a flow's timespan steps: give it as <step>.${key} (e.g. checkout.${key})` };
  return step === undefined ? { key } : { step, key };
}

/** The key as written in budgets: `lcp`, `checkout.inp`. */
export const budgetKeyText = ({ step, key }: ScopedBudgetKey): string => (step === undefined ? key : `${step}.${key}`);

/**
 * Limits by key (`budgets`, `maxRegression`): what a caller sends and what a store reads back,
 * one schema, so nothing is stored that cannot be read again. Keys may be scoped to a flow's
 * step (`checkout.inp`).
 */
export const limitsSchema = (name: string) =>
  withoutPrototypeKeys(
    z
      .record(
        z.string().max(120, `${name}: a key is at most 120 characters`),
        z.number({ error: `${name}: each limit is a number` }).nonnegative(`${name}: a limit is not negative`),
      )
      .superRefine((limits, ctx) => {
        if (Object.keys(limits).length > 100) ctx.addIssue({ code: 'custom', message: `${name}: at most 100 limits` });
        for (const [text, value] of Object.entries(limits)) {
          const scoped = splitBudgetKey(text);
          if ('error' in scoped) ctx.addIssue({ code: 'custom', message: `${name}: ${scoped.error}` });
          else if (BUDGET_KEYS[scoped.key].kind === 'score' && value > 100)
            ctx.addIssue({ code: 'custom', message: `${name}: ${text} is a score from 0 to 100, not ${value}` });
        }
      }) as unknown as z.ZodType<Record<string, number>>,
    name,
  );

/**
 * A budget file: limits per key and, optionally, the largest allowed regression against the
 * previous snapshot (score points for scores, percent for metrics).
 */
export const budgetFileSchema = z.strictObject({
  budgets: limitsSchema('budgets').default({}),
  maxRegression: limitsSchema('maxRegression').default({}),
});
export type Budgets = z.output<typeof budgetFileSchema>;

/**
 * Budgets as stores keep them: each map as a list of {key, limit}, since a step's key has a dot
 * (`checkout.inp`), which MongoDB-wire servers refuse in a field name (and FerretDB refuses
 * arrays of arrays). Read back in either form (objects were stored before step budgets), by
 * the caller's own schema.
 */
export const storedBudgets = ({ budgets, maxRegression }: Budgets) => ({
  budgets: Object.entries(budgets).map(([key, limit]) => ({ key, limit })),
  maxRegression: Object.entries(maxRegression).map(([key, limit]) => ({ key, limit })),
});
const fromEntries = (value: unknown) =>
  Array.isArray(value)
    ? Object.fromEntries(
        value.map((entry: unknown) => {
          const { key, limit } = (entry ?? {}) as { key?: unknown; limit?: unknown };
          return [String(key), limit];
        }),
      )
    : value;
export const storedBudgetsSchema = z.preprocess(
  (value) =>
    typeof value === 'object' && value !== null
      ? {
          ...value,
          budgets: fromEntries((value as { budgets?: unknown }).budgets),
          maxRegression: fromEntries((value as { maxRegression?: unknown }).maxRegression),
        }
      : value,
  budgetFileSchema,
);

export class BudgetSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetSpecError';
  }
}

/** `performance=90`, `lcp=2500`, `checkout.inp=200`: one `--budget` (or `--max-regression`) flag. */
export function parseLimit(text: string): [string, number] {
  const match = /^(.+)=(\d+(?:\.\d+)?)$/.exec(text.trim());
  if (!match)
    throw new BudgetSpecError(`"${text}" is not KEY=NUMBER (e.g. performance=90, lcp=2500, checkout.inp=200)`);
  const scoped = splitBudgetKey(match[1]!);
  if ('error' in scoped) throw new BudgetSpecError(scoped.error);
  const value = Number(match[2]);
  if (BUDGET_KEYS[scoped.key].kind === 'score' && value > 100)
    throw new BudgetSpecError(`${match[1]} is a score from 0 to 100, not ${value}`);
  return [budgetKeyText(scoped), value];
}

const budgetCheckSchema = z.object({
  key: z.enum(budgetKeyNames),
  /** The flow step the check is of (issue 36); absent: the project's page (a flow's first step). */
  step: z.string().max(40).optional(),
  /** What was measured, or null when the result does not have it. */
  actual: z.number().nullable(),
  kind: z.enum(['budget', 'regression']),
  /** The budget, or for a regression check the previous snapshot's value. */
  limit: z.number(),
  /** Regression checks: the allowed change (points, or percent for metrics). */
  allowed: z.number().optional(),
  pass: z.boolean(),
  message: z.string(),
});
export type BudgetCheck = z.infer<typeof budgetCheckSchema>;

/** Names a check across snapshots: its kind and key (`budget:performance`, `regression:lcp`, `budget:checkout.inp`). */
export const checkId = (check: Pick<BudgetCheck, 'kind' | 'key' | 'step'>): string =>
  `${check.kind}:${budgetKeyText(check)}`;

interface CellReport {
  device: Device;
  location: Location;
  checks: BudgetCheck[];
}

export interface BudgetReport {
  pass: boolean;
  cells: CellReport[];
}

/** A key's value in one Lighthouse result: a score 0–100 or a metric in its unit. */
export function measure(lighthouse: Readonly<Record<string, unknown>>, key: BudgetKey): number | null {
  const spec = BUDGET_KEYS[key];
  const field = (group: unknown, id: string, name: string): unknown =>
    (group as Record<string, Record<string, unknown> | undefined> | undefined)?.[id]?.[name];
  if (spec.kind === 'score') {
    const score = field(lighthouse['categories'], spec.category, 'score');
    return typeof score === 'number' ? Math.round(score * 100) : null;
  }
  const value = field(lighthouse['audits'], spec.audit, 'numericValue');
  return typeof value === 'number' ? value : null;
}

export function formatValue(key: BudgetKey, value: number | null): string {
  if (value === null) return 'not measured';
  const spec = BUDGET_KEYS[key];
  if (spec.kind === 'score') return String(value);
  if (key === 'cls') return value.toFixed(3);
  return `${Math.round(value)}${spec.unit ? ` ${spec.unit}` : ''}`;
}

function budgetCheck({ step, key }: ScopedBudgetKey, actual: number | null, limit: number): BudgetCheck {
  const spec = BUDGET_KEYS[key];
  const pass = actual !== null && (spec.kind === 'score' ? actual >= limit : actual <= limit);
  const bound = spec.kind === 'score' ? 'at least' : 'at most';
  return {
    key,
    ...(step !== undefined ? { step } : {}),
    actual,
    kind: 'budget',
    limit,
    pass,
    message: `${step !== undefined ? `${step}: ` : ''}${spec.label} ${formatValue(key, actual)}, budget ${bound} ${formatValue(key, limit)}`,
  };
}

function regressionCheck(
  { step, key }: ScopedBudgetKey,
  actual: number | null,
  previous: number,
  allowed: number,
): BudgetCheck {
  const spec = BUDGET_KEYS[key];
  const where = step !== undefined ? `${step}: ` : '';
  const check = (pass: boolean, message: string): BudgetCheck => ({
    key,
    ...(step !== undefined ? { step } : {}),
    actual,
    kind: 'regression',
    limit: previous,
    allowed,
    pass,
    message: `${where}${message}`,
  });
  if (actual === null) return check(false, `${spec.label} not measured (previous ${formatValue(key, previous)})`);
  if (spec.kind === 'score') {
    const drop = previous - actual;
    const points = drop > 0 ? `-${drop}` : `+${-drop}`;
    return check(
      drop <= allowed,
      `${spec.label} ${actual}, previous ${previous} (${points} points, at most -${allowed} allowed)`,
    );
  }
  const change = previous === 0 ? (actual === 0 ? 0 : Infinity) : ((actual - previous) / previous) * 100;
  const shown = Number.isFinite(change) ? `${change >= 0 ? '+' : ''}${change.toFixed(1)} %` : 'from 0';
  return check(
    change <= allowed,
    `${spec.label} ${formatValue(key, actual)}, previous ${formatValue(key, previous)} (${shown}, at most +${allowed} % allowed)`,
  );
}

/** A flow's steps as budgets read them: each step's name and its result's numbers. */
export type MeasuredSteps = ReadonlyArray<{ name: string; lighthouse: Readonly<Record<string, unknown>> }>;

/** What a check measures: the page's result, or the named step's (null when the flow has no such step). */
function measuredFor(
  lighthouse: Readonly<Record<string, unknown>> | undefined,
  steps: MeasuredSteps | undefined,
  { step, key }: ScopedBudgetKey,
): number | null {
  if (step === undefined) return lighthouse ? measure(lighthouse, key) : null;
  const named = steps?.find((s) => s.name.toLowerCase() === step.toLowerCase());
  return named ? measure(named.lighthouse, key) : null;
}

/** Budget keys as written, each split into its step and key (a stored key that no longer reads is skipped). */
function scopedLimits(limits: Readonly<Record<string, number>>): Array<[ScopedBudgetKey, number]> {
  return Object.entries(limits).flatMap(([text, value]) => {
    const scoped = splitBudgetKey(text);
    return 'error' in scoped ? [] : [[scoped, value] as [ScopedBudgetKey, number]];
  });
}

/**
 * One (device, location)'s Lighthouse result against the budgets and, given the previous
 * snapshot's result of the same cell, against the allowed regressions: what the CLI checks in
 * CI and the gateway checks on every stored snapshot. A flow's cell gives its steps, which
 * step-scoped keys (`checkout.inp`) are checked against.
 */
export function checkCell(
  lighthouse: Readonly<Record<string, unknown>>,
  budgets: Budgets,
  previous?: Readonly<Record<string, unknown>>,
  steps?: { current?: MeasuredSteps | undefined; previous?: MeasuredSteps | undefined },
): BudgetCheck[] {
  const checks: BudgetCheck[] = [];
  for (const [scoped, limit] of scopedLimits(budgets.budgets))
    checks.push(budgetCheck(scoped, measuredFor(lighthouse, steps?.current, scoped), limit));
  if (previous) {
    for (const [scoped, allowed] of scopedLimits(budgets.maxRegression)) {
      const was = measuredFor(previous, steps?.previous, scoped);
      if (was !== null)
        checks.push(regressionCheck(scoped, measuredFor(lighthouse, steps?.current, scoped), was, allowed));
    }
  }
  return checks;
}

/** Whether budgets hold any limit at all. */
export const hasBudgets = (budgets: Budgets): boolean =>
  Object.keys(budgets.budgets).length > 0 || Object.keys(budgets.maxRegression).length > 0;

/**
 * Checks every (device, location) of a result against the budgets and, where the previous
 * snapshot has the same cell, against the allowed regression. A cell without a previous
 * value is not held to a regression (the first snapshot cannot regress).
 */
export function evaluateBudgets(result: AuditResult, budgets: Budgets, previous?: AuditResult): BudgetReport {
  const cells: CellReport[] = [];
  for (const device of DEVICES) {
    for (const location of LOCATIONS) {
      const cell = result[device]?.[location];
      if (cell)
        cells.push({
          device,
          location,
          checks: checkCell(cell.lighthouse, budgets, previous?.[device]?.[location]?.lighthouse, {
            current: cell.steps,
            previous: previous?.[device]?.[location]?.steps,
          }),
        });
    }
  }
  return { pass: cells.length > 0 && cells.every((cell) => cell.checks.every((check) => check.pass)), cells };
}

const ALERT_STATES = ['passing', 'failing'] as const;
export type AlertState = (typeof ALERT_STATES)[number];
const BUDGET_EVENTS = ['budget.failed', 'budget.recovered'] as const;

/**
 * A check of a stored snapshot: the check, the alert state it leaves (per project, device,
 * location and check), the confirmation run's value when the failure needed one, and the
 * event it announced, if any (docs/cli-and-budgets.md, "The alert rule", has the rule).
 */
export const cellCheckSchema = budgetCheckSchema
  .extend({
    state: z
      .enum(ALERT_STATES)
      .meta({ description: "The check's alert state after this snapshot: failing only once a failure was confirmed." }),
    confirmation: z.object({ actual: z.number().nullable(), pass: z.boolean() }).nullable().optional().meta({
      description:
        "A failure of a passing check is measured once more: the confirmation run's value and whether it passed; null when that run produced no result.",
    }),
    event: z
      .enum(BUDGET_EVENTS)
      .optional()
      .meta({ description: 'The event this snapshot announced for the check, if its state changed.' }),
  })
  .meta({
    id: 'BudgetCheck',
    description: "One budget or regression check of a snapshot's device and location (perfwatch's addition).",
  });
export type CellCheck = z.infer<typeof cellCheckSchema>;

/** `/v1/budgets`' answer: what a project's snapshots are checked against. */
export const projectBudgetsSchema = z
  .object({ url: z.string(), budgets: limitsSchema('budgets'), maxRegression: limitsSchema('maxRegression') })
  .meta({ id: 'ProjectBudgets' });
export type ProjectBudgets = z.infer<typeof projectBudgetsSchema>;
