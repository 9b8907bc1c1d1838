import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  type AuditResult,
  DEVICES,
  LOCATIONS,
  type Device,
  type Location,
  SECTIONS,
  type Section,
  parseEnv,
  budgetFileSchema,
  BudgetSpecError,
  evaluateBudgets,
  hasBudgets,
  parseLimit,
  type BudgetReport,
  type Budgets,
} from '@perfwatch/common';
import { createApiClient, type ApiClient } from './api-client.ts';
import { clientProgramSettings } from './client-config.ts';
import { budgetJunitXml } from './budget-junit.ts';
import { auditResultTable, budgetTable, compareTable, overviewTable } from './result-tables.ts';
import { updateProgress, type ProgressStream } from './update-progress.ts';

export const CLIENT_USAGE = `usage:
  perfwatch update URL [--device mobile|desktop] [--async [--wait]] [--json]
  perfwatch update URL --ci [--budget KEY=N]... [--max-regression KEY=N]... [--budget-file FILE] [--junit FILE]
                            [--annotate TEXT [--annotate-link URL]]
  perfwatch audit URL --date yyyy-MM-ddTHH:mm:ss [--device D] [--location a,b] [--json]
  perfwatch compare URL DATE_A DATE_B [--device D] [--location a,b] [--json]
  perfwatch overview --from yyyy-MM-dd --to yyyy-MM-dd [--domain D] [--section S]... [--update-type T] [--json]
common: --server URL (PERFWATCH_SERVER, default http://127.0.0.1:8080), --token TOKEN (PERFWATCH_TOKEN)
budgets: performance, accessibility, best-practices, seo (scores 0-100, floors);
         lcp, fcp, tbt, si, tti, ttfb (ms), cls, bytes (ceilings)
--max-regression: against the previous snapshot, score points or percent for metrics
--ci without budget flags checks the budgets the project has on the server (perfwatch admin set-budgets)
--annotate: a deploy marker at the snapshot's date, drawn on the dashboard's trend plots
exit: 0 passed, 1 a budget failed or the update failed, 2 usage, 3 the API could not be used`;

export const EXIT = { ok: 0, failed: 1, usage: 2, api: 3 } as const;

const common = {
  server: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} satisfies ParseArgsConfig['options'];

const OPTIONS = {
  update: {
    ...common,
    device: { type: 'string' },
    async: { type: 'boolean', default: false },
    wait: { type: 'boolean', default: false },
    ci: { type: 'boolean', default: false },
    budget: { type: 'string', multiple: true, default: [] },
    'max-regression': { type: 'string', multiple: true, default: [] },
    'budget-file': { type: 'string' },
    junit: { type: 'string' },
    timeout: { type: 'string' },
    annotate: { type: 'string' },
    'annotate-link': { type: 'string' },
  },
  audit: { ...common, date: { type: 'string' }, device: { type: 'string' }, location: { type: 'string' } },
  compare: { ...common, device: { type: 'string' }, location: { type: 'string' } },
  overview: {
    ...common,
    from: { type: 'string' },
    to: { type: 'string' },
    domain: { type: 'string' },
    section: { type: 'string', multiple: true, default: [] },
    'update-type': { type: 'string' },
  },
} satisfies Record<string, ParseArgsConfig['options']>;
export type ClientVerb = keyof typeof OPTIONS;
export const CLIENT_VERBS = Object.keys(OPTIONS) as ClientVerb[];

class UsageError extends Error {}

export interface CliIo {
  out: ProgressStream;
  err: ProgressStream;
  fetch?: typeof fetch;
  /** Poll interval of a waited-for update. */
  pollMs?: number;
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}

/** `perfwatch update|audit|overview …`. Returns the exit code. */
export async function main(
  verb: ClientVerb,
  argv: string[],
  env: Readonly<Record<string, string | undefined>>,
  io: CliIo = { out: process.stdout, err: process.stderr },
): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: OPTIONS[verb],
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      io.out.write(`${CLIENT_USAGE}\n`);
      return EXIT.ok;
    }
    const config = parseEnv(clientProgramSettings.schema, env);
    const token = values.token ?? config.PERFWATCH_TOKEN;
    if (!token) throw new UsageError('no API token: pass --token or set PERFWATCH_TOKEN');
    const client = createApiClient({ server: values.server ?? config.PERFWATCH_SERVER, token, fetch: io.fetch });
    if (verb === 'overview') return await overview(client, values as OverviewFlags, positionals, io);
    if (verb === 'compare') return await compare(client, positionals, values as CompareFlags, io);
    const [url, ...extra] = positionals;
    if (!url || extra.length > 0) throw new UsageError(`${verb} takes one URL`);
    if (verb === 'audit') return await audit(client, url, values as AuditFlags, io);
    return await update(client, url, values as UpdateFlags, io);
  } catch (error) {
    if (
      error instanceof UsageError ||
      error instanceof BudgetSpecError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ||
      (error as Error).name === 'ConfigError'
    ) {
      io.err.write(`perfwatch ${verb}: ${(error as Error).message}\n${CLIENT_USAGE}\n`);
      return EXIT.usage;
    }
    io.err.write(`perfwatch ${verb}: ${(error as Error).message}\n`);
    return EXIT.api;
  }
}

interface UpdateFlags {
  device?: string;
  async: boolean;
  wait: boolean;
  ci: boolean;
  json: boolean;
  budget: string[];
  'max-regression': string[];
  'budget-file'?: string;
  junit?: string;
  timeout?: string;
  annotate?: string;
  'annotate-link'?: string;
}

async function readBudgets(flags: UpdateFlags): Promise<Budgets> {
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
  // Flags win over the file, key by key.
  for (const text of flags.budget) budgets.budgets = { ...budgets.budgets, ...Object.fromEntries([parseLimit(text)]) };
  for (const text of flags['max-regression'])
    budgets.maxRegression = { ...budgets.maxRegression, ...Object.fromEntries([parseLimit(text)]) };
  return budgets;
}

/** The update's flags that only go together, checked; the time to wait for its result. */
function checkedTimeout(flags: UpdateFlags, checking: boolean): number {
  if (flags.async && !flags.wait && (checking || flags.junit))
    throw new UsageError('budgets need the result: use --ci (or --async --wait)');
  if (flags.async && !flags.wait && flags.annotate !== undefined)
    throw new UsageError("--annotate needs the snapshot's date: use --ci (or --async --wait)");
  if (flags['annotate-link'] !== undefined && flags.annotate === undefined)
    throw new UsageError('--annotate-link goes with --annotate');
  const timeoutMs = flags.timeout === undefined ? 15 * 60_000 : Number(flags.timeout) * 1000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new UsageError('--timeout is in seconds, a positive number');
  return timeoutMs;
}

/** Holds the result to the budgets given (or, with none, to the project's, as stored) and says so; the exit code. */
async function reportBudgets(
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
  flags: UpdateFlags,
  io: CliIo,
): Promise<number> {
  // No budget of its own: the run is held to the project's budgets, as the gateway checked them.
  const report = hasBudgets(budgets)
    ? evaluateBudgets(
        result,
        budgets,
        Object.keys(budgets.maxRegression).length > 0 ? await previousSnapshot(client, url, date, result) : undefined,
      )
    : serverChecks(result);
  if (flags.junit) await writeFile(flags.junit, budgetJunitXml(url, report, (Date.now() - started) / 1000));
  if (flags.json) io.out.write(`${JSON.stringify({ url, date, pass: report.pass, cells: report.cells })}\n`);
  else
    io.out.write(
      `${url} at ${date}\n${auditResultTable(result)}\n${budgetTable(report)}\n${report.pass ? 'budgets: passed' : 'budgets: FAILED'}\n`,
    );
  return report.pass ? EXIT.ok : EXIT.failed;
}

async function update(client: ApiClient, url: string, flags: UpdateFlags, io: CliIo): Promise<number> {
  const device = oneOf(flags.device, DEVICES, 'device');
  const budgets = await readBudgets(flags);
  const checking = flags.ci || hasBudgets(budgets);
  const timeoutMs = checkedTimeout(flags, checking);
  const updateType = flags.ci ? 'ci' : 'manual';
  const started = Date.now();

  let result: AuditResult;
  let date: string;
  if (flags.async || flags.ci) {
    // CI waits by polling: no HTTP request held open for minutes through proxies and runners.
    const id = await client.startUpdate({ url, device, updateType });
    if (!flags.wait && !flags.ci) {
      io.out.write(flags.json ? `${JSON.stringify({ ok: 1, id })}\n` : `${id}\n`);
      return EXIT.ok;
    }
    const progress = updateProgress(io.err);
    const status = await client
      .waitForUpdate(id, { pollMs: io.pollMs, timeoutMs, onStatus: progress.show })
      .finally(progress.end);
    if (status.status === 'failed' || !status.date) {
      const reason = `update ${id} failed: ${status.reason ?? 'no reason given'}`;
      io.err.write(`${reason}\n`);
      if (flags.junit)
        await writeFile(flags.junit, budgetJunitXml(url, { error: reason }, (Date.now() - started) / 1000));
      return EXIT.failed;
    }
    date = status.date;
    result = await client.audit({ url, date, device });
  } else {
    result = await client.update({ url, device, updateType });
    date = Object.values(result).flatMap((cells) => Object.values(cells ?? {}))[0]?.lighthouse.date ?? '';
  }
  if (flags.annotate !== undefined) {
    await client.annotate({
      url,
      text: flags.annotate,
      date,
      ...(flags['annotate-link'] ? { link: flags['annotate-link'] } : {}),
    });
    io.err.write(`annotated ${url} at ${date}: ${flags.annotate}\n`);
  }

  if (!checking) {
    io.out.write(flags.json ? `${JSON.stringify(result)}\n` : `${url} at ${date}\n${auditResultTable(result)}\n`);
    return EXIT.ok;
  }
  return reportBudgets(client, { url, date, result, budgets, started }, flags, io);
}

/** The checks the gateway stored with the snapshot, as a report (no cell has any: passed, with no budgets). */
function serverChecks(result: AuditResult): BudgetReport {
  const cells = DEVICES.flatMap((device) =>
    LOCATIONS.flatMap((location) => {
      const cell = result[device]?.[location];
      return cell
        ? [
            {
              device,
              location,
              checks: (cell.checks ?? []).map(({ key, kind, actual, limit, allowed, pass, message }) => ({
                key,
                kind,
                actual,
                limit,
                ...(allowed === undefined ? {} : { allowed }),
                pass,
                message,
              })),
            },
          ]
        : [];
    }),
  );
  return { pass: cells.length > 0 && cells.every((cell) => cell.checks.every((check) => check.pass)), cells };
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

interface AuditFlags {
  date?: string;
  device?: string;
  location?: string;
  json: boolean;
}

async function audit(client: ApiClient, url: string, flags: AuditFlags, io: CliIo): Promise<number> {
  if (!flags.date) throw new UsageError('audit needs --date yyyy-MM-ddTHH:mm:ss (perfwatch update prints it)');
  const locations = flags.location?.split(',').map((name) => oneOf(name.trim(), LOCATIONS, 'location') as Location);
  const result = await client.audit({
    url,
    date: flags.date,
    device: oneOf(flags.device, DEVICES, 'device') as Device | undefined,
    location: locations,
  });
  io.out.write(flags.json ? `${JSON.stringify(result)}\n` : `${url} at ${flags.date}\n${auditResultTable(result)}\n`);
  return EXIT.ok;
}

interface CompareFlags {
  device?: string;
  location?: string;
  json: boolean;
}

async function compare(client: ApiClient, positionals: string[], flags: CompareFlags, io: CliIo): Promise<number> {
  const [url, from, to, ...extra] = positionals;
  if (!url || !from || !to || extra.length > 0)
    throw new UsageError(
      'compare takes a URL and two snapshot dates (yyyy-MM-ddTHH:mm:ss; perfwatch update prints them)',
    );
  const locations = flags.location?.split(',').map((name) => oneOf(name.trim(), LOCATIONS, 'location') as Location);
  const result = await client.compare({
    url,
    from,
    to,
    device: oneOf(flags.device, DEVICES, 'device') as Device | undefined,
    location: locations,
  });
  io.out.write(flags.json ? `${JSON.stringify(result)}\n` : `${compareTable(result)}\n`);
  return EXIT.ok;
}

interface OverviewFlags {
  from?: string;
  to?: string;
  domain?: string;
  section: string[];
  'update-type'?: string;
  json: boolean;
}

async function overview(client: ApiClient, flags: OverviewFlags, positionals: string[], io: CliIo): Promise<number> {
  if (positionals.length > 0) throw new UsageError('overview takes no URL; filter with --domain');
  if (!flags.from || !flags.to) throw new UsageError('overview needs --from and --to (yyyy-MM-dd)');
  const records = await client.overview({
    startDate: flags.from,
    endDate: flags.to,
    domain: flags.domain,
    updateType: oneOf(flags['update-type'], ['manual', 'scheduled', 'ci'] as const, 'update-type'),
    sections:
      flags.section.length > 0
        ? flags.section.map((s) => oneOf(s.toLowerCase(), SECTIONS, 'section') as Section)
        : undefined,
  });
  io.out.write(
    flags.json ? `${JSON.stringify(records)}\n` : `${overviewTable(records)}\n${records.length} record(s)\n`,
  );
  return EXIT.ok;
}
