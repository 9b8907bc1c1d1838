import { writeFile } from 'node:fs/promises';
import type { ParseArgsOptionsConfig } from 'node:util';
import {
  defineCommand,
  DEVICES,
  EXIT,
  hasBudgets,
  UsageError,
  type AuditResult,
  type Device,
  type ExitCode,
  type Revision,
} from '@perfwatch/common';
import type { ApiClient } from './api-client.ts';
import { readBudgets, reportBudgets, type BudgetFlags } from './budget-check.ts';
import { budgetJunitXml } from './budget-junit.ts';
import { COMMON_OPTIONS, oneOf, type ClientContext, type ClientIo } from './client-command.ts';
import { forgeChangeFor, sendForgeReport, type ForgeReportFlags } from './forge-report.ts';
import { auditResultTable } from './result-tables.ts';
import { REVISION_OPTIONS, resultHeading, revisionOfFlags, type RevisionFlags } from './revision-flags.ts';
import { SITE_UPDATE_OPTIONS, singleUrl, siteUpdate } from './site-update-command.ts';
import { updateProgress } from './update-progress.ts';

interface UpdateFlags extends BudgetFlags, RevisionFlags, ForgeReportFlags {
  device?: string;
  async: boolean;
  wait: boolean;
  timeout?: string;
  annotate?: string;
  'annotate-link'?: string;
}

const UPDATE_OPTIONS = {
  ...COMMON_OPTIONS,
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
  ...REVISION_OPTIONS,
  report: { type: 'string' },
  'base-url': { type: 'string' },
  ...SITE_UPDATE_OPTIONS,
} satisfies ParseArgsOptionsConfig;

export const updateCommand = defineCommand<ClientContext, typeof UPDATE_OPTIONS>({
  synopsis: [
    'URL [--device mobile|desktop] [--async [--wait]] [--json] [--commit SHA] [--branch NAME] [--pull-request N]',
    'URL --ci [--budget KEY=N]... [--max-regression KEY=N]... [--budget-file FILE] [--junit FILE]\n' +
      '                            [--annotate TEXT [--annotate-link URL]]\n' +
      '                            [--report github|gitlab|gitea [--base-url URL]]',
    '--site ORIGIN [--ci] [--pages FILE|-] [--all] [--device mobile|desktop] [--plan] [--json] [--junit FILE]\n' +
      '                            [--commit SHA] [--branch NAME] [--pull-request N] [--timeout SECONDS]',
  ],
  summary: ["run an update of a project, optionally checked against budgets; or of a site's pages (--site)"],
  options: UPDATE_OPTIONS,
  args: { count: [0, 1], refused: 'update takes one URL, or --site ORIGIN' },
  run: ({ args, values, context }) =>
    values.site === undefined ? update(context, singleUrl(args, values), values) : siteUpdate(context, args, values),
});

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

async function update(context: ClientContext, url: string, flags: UpdateFlags): Promise<ExitCode> {
  const { client, io } = context;
  const device = oneOf(flags.device, DEVICES, 'device');
  const budgets = await readBudgets(flags);
  const checking = flags.ci || hasBudgets(budgets);
  const timeoutMs = checkedTimeout(flags, checking);
  // A CI job that cannot report learns it now, not after its runs.
  const change = forgeChangeFor(flags, context.env);
  const fromCi = change && { commit: change.commit, branch: change.branch, pullRequest: change.pullRequest };
  const revision: Revision = { ...fromCi, ...revisionOfFlags(flags) };
  const started = Date.now();
  const measured =
    flags.async || flags.ci
      ? await queuedUpdate(client, { url, device, timeoutMs, started, revision }, flags, io)
      : await syncUpdate(client, { url, device, revision }, flags);
  if (typeof measured === 'number') return measured;
  const { result, date } = measured;
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
    io.out.write(
      flags.json ? `${JSON.stringify(result)}\n` : `${resultHeading(url, date, result)}\n${auditResultTable(result)}\n`,
    );
    return EXIT.ok;
  }
  const checked = await reportBudgets(client, { url, date, result, budgets, started }, flags, io);
  if (change)
    await sendForgeReport(context, change, {
      url,
      date,
      result,
      budgets: checked.report,
      baseUrl: flags['base-url'] ?? url,
    });
  return checked.exit;
}

type Measured = { result: AuditResult; date: string };

async function syncUpdate(
  client: ApiClient,
  { url, device, revision }: { url: string; device: Device | undefined; revision: Revision },
  flags: UpdateFlags,
) {
  const result = await client.update({ url, device, updateType: flags.ci ? 'ci' : 'manual', ...revision });
  const date = Object.values(result).flatMap((cells) => Object.values(cells ?? {}))[0]?.lighthouse.date ?? '';
  return { result, date };
}

/** An update queued, then (unless only started) waited for; an exit code when there is no result to go on with. */
async function queuedUpdate(
  client: ApiClient,
  {
    url,
    device,
    timeoutMs,
    started,
    revision,
  }: { url: string; device: Device | undefined; timeoutMs: number; started: number; revision: Revision },
  flags: UpdateFlags,
  io: ClientIo,
): Promise<Measured | ExitCode> {
  // CI waits by polling: no HTTP request held open for minutes through proxies and runners.
  const id = await client.startUpdate({ url, device, updateType: flags.ci ? 'ci' : 'manual', ...revision });
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
  return { result: await client.audit({ url, date: status.date, device }), date: status.date };
}
