import { readFile, writeFile } from 'node:fs/promises';
import {
  budgetFileSchema,
  DEVICES,
  evaluateBudgets,
  EXIT,
  hasBudgets,
  parseLimit,
  storedChecksReport,
  UsageError,
  type AuditResult,
  type BudgetReport,
  type Budgets,
  type ExitCode,
} from '@perfwatch/common';
import type { ApiClient } from './api-client.ts';
import { budgetJunitXml } from './budget-junit.ts';
import type { ClientIo } from './client-command.ts';
import { auditResultTable, budgetTable } from './result-tables.ts';
import { resultHeading } from './revision-flags.ts';

/** The budget flags of `perfwatch update`. */
export interface BudgetFlags {
  budget: string[];
  'max-regression': string[];
  'budget-file'?: string;
  junit?: string;
  json: boolean;
}

/** The budgets a file and the flags give; flags win over the file, key by key. */
export async function readBudgets(flags: BudgetFlags): Promise<Budgets> {
  let budgets: Budgets = { budgets: {}, maxRegression: {} };
  if (flags['budget-file']) {
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(flags['budget-file'], 'utf8'));
    } catch (error) {
      throw new UsageError(`--budget-file ${flags['budget-file']}: ${(error as Error).message}`);
    }
    const parsed = budgetFileSchema.safeParse(raw);
    if (!parsed.success)
      throw new UsageError(
        `--budget-file ${flags['budget-file']}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`,
      );
    budgets = parsed.data;
  }
  for (const text of flags.budget) budgets.budgets = { ...budgets.budgets, ...Object.fromEntries([parseLimit(text)]) };
  for (const text of flags['max-regression'])
    budgets.maxRegression = { ...budgets.maxRegression, ...Object.fromEntries([parseLimit(text)]) };
  return budgets;
}

/** Holds the result to the budgets given (or, with none, to the project's, as stored) and says so; the exit code. */
export async function reportBudgets(
  client: ApiClient,
  {
    url,
    date,
    result,
    budgets,
    started,
  }: {
    url: string;
    date: string;
    result: AuditResult;
    budgets: Budgets;
    started: number;
  },
  flags: BudgetFlags,
  io: ClientIo,
): Promise<{ exit: ExitCode; report: BudgetReport }> {
  // No budget of its own: the run is held to the project's budgets, as the gateway checked them.
  const report = hasBudgets(budgets)
    ? evaluateBudgets(
        result,
        budgets,
        Object.keys(budgets.maxRegression).length > 0 ? await previousSnapshot(client, url, date, result) : undefined,
      )
    : storedChecksReport(result);
  if (flags.junit) await writeFile(flags.junit, budgetJunitXml(url, report, (Date.now() - started) / 1000));
  if (flags.json) io.out.write(`${JSON.stringify({ url, date, pass: report.pass, cells: report.cells })}\n`);
  else
    io.out.write(
      `${resultHeading(url, date, result)}\n${auditResultTable(result)}\n${budgetTable(report)}\n${report.pass ? 'budgets: passed' : 'budgets: FAILED'}\n`,
    );
  return { exit: report.pass ? EXIT.ok : EXIT.failed, report };
}

/** The latest snapshot before `date`, per device of `result`; undefined when there is none. */
async function previousSnapshot(
  client: ApiClient,
  url: string,
  date: string,
  result: AuditResult,
): Promise<AuditResult | undefined> {
  const list = await client.updates(url);
  const previous: AuditResult = {};
  for (const device of DEVICES) {
    if (!result[device]) continue;
    const before = (list[device] ?? []).filter((entry) => entry.date < date).at(-1);
    if (before) Object.assign(previous, await client.audit({ url, date: before.date, device }));
  }
  return Object.keys(previous).length > 0 ? previous : undefined;
}
