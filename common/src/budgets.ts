import { z } from 'zod';
import type { AuditResult } from './audit-result.ts';
import { DEVICES, LOCATIONS, type Device, type Location } from './ids.ts';
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
 * Limits by key (`budgets`, `maxRegression`): what a caller sends and what a store reads back,
 * one schema, so nothing is stored that cannot be read again.
 */
export const limitsSchema = (name: string) =>
  withoutPrototypeKeys(
    z
      .record(
        z.string(),
        z.number({ error: `${name}: each limit is a number` }).nonnegative(`${name}: a limit is not negative`),
      )
      .superRefine((limits, ctx) => {
        for (const [key, value] of Object.entries(limits)) {
          if (!isBudgetKey(key))
            ctx.addIssue({ code: 'custom', message: `${name}: unknown budget key "${key}"; known: ${budgetKeyList}` });
          else if (BUDGET_KEYS[key].kind === 'score' && value > 100)
            ctx.addIssue({ code: 'custom', message: `${name}: ${key} is a score from 0 to 100, not ${value}` });
        }
      }) as unknown as z.ZodType<Partial<Record<BudgetKey, number>>>,
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

export class BudgetSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BudgetSpecError';
  }
}

/** `performance=90`, `lcp=2500`: one `--budget` (or `--max-regression`) flag. */
export function parseLimit(text: string): [BudgetKey, number] {
  const match = /^([a-z-]+)=(\d+(?:\.\d+)?)$/.exec(text.trim());
  if (!match) throw new BudgetSpecError(`"${text}" is not KEY=NUMBER (e.g. performance=90, lcp=2500)`);
  const key = match[1]!;
  if (!isBudgetKey(key)) throw new BudgetSpecError(`unknown budget key "${key}"; known: ${budgetKeyList}`);
  const value = Number(match[2]);
  if (BUDGET_KEYS[key].kind === 'score' && value > 100)
    throw new BudgetSpecError(`${key} is a score from 0 to 100, not ${value}`);
  return [key, value];
}

const budgetCheckSchema = z.object({
  key: z.enum(budgetKeyNames),
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

/** Names a check across snapshots: its kind and key (`budget:performance`, `regression:lcp`). */
export const checkId = (check: Pick<BudgetCheck, 'kind' | 'key'>): string => `${check.kind}:${check.key}`;

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

function budgetCheck(key: BudgetKey, actual: number | null, limit: number): BudgetCheck {
  const spec = BUDGET_KEYS[key];
  const pass = actual !== null && (spec.kind === 'score' ? actual >= limit : actual <= limit);
  const bound = spec.kind === 'score' ? 'at least' : 'at most';
  return {
    key,
    actual,
    kind: 'budget',
    limit,
    pass,
    message: `${spec.label} ${formatValue(key, actual)}, budget ${bound} ${formatValue(key, limit)}`,
  };
}

function regressionCheck(key: BudgetKey, actual: number | null, previous: number, allowed: number): BudgetCheck {
  const spec = BUDGET_KEYS[key];
  const check = (pass: boolean, message: string): BudgetCheck => ({
    key,
    actual,
    kind: 'regression',
    limit: previous,
    allowed,
    pass,
    message,
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

/**
 * One (device, location)'s Lighthouse result against the budgets and, given the previous
 * snapshot's result of the same cell, against the allowed regressions: what the CLI checks in
 * CI and the gateway checks on every stored snapshot.
 */
export function checkCell(
  lighthouse: Readonly<Record<string, unknown>>,
  budgets: Budgets,
  previous?: Readonly<Record<string, unknown>>,
): BudgetCheck[] {
  const checks: BudgetCheck[] = [];
  for (const [key, limit] of Object.entries(budgets.budgets) as Array<[BudgetKey, number]>)
    checks.push(budgetCheck(key, measure(lighthouse, key), limit));
  if (previous) {
    for (const [key, allowed] of Object.entries(budgets.maxRegression) as Array<[BudgetKey, number]>) {
      const was = measure(previous, key);
      if (was !== null) checks.push(regressionCheck(key, measure(lighthouse, key), was, allowed));
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
          checks: checkCell(cell.lighthouse, budgets, previous?.[device]?.[location]?.lighthouse),
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
