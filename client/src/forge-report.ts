import { openSync, readSync, closeSync } from 'node:fs';
import {
  ciChangeOf,
  commitStatuses,
  compareViewLink,
  forgeClient,
  FORGES,
  reportComment,
  reportMarker,
  reportToForge,
  UsageError,
  type AuditResult,
  type BudgetReport,
  type ChangeReport,
  type CiChange,
  type Env,
  type ForgeOutcome,
} from '@perfwatch/common';
import { ApiClientError, type ApiClient } from './api-client.ts';
import type { ClientIo } from './client-command.ts';
import { oneOf } from './client-command.ts';

/** The flags of `perfwatch update` that report to a forge. */
export interface ForgeReportFlags {
  ci: boolean;
  report?: string;
  'base-url'?: string;
}

/** Reads at most `maxBytes` of a file: the CI's event payload, which perfwatch does not trust to be small. */
function readBounded(path: string, maxBytes: number): string {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    if (length > maxBytes) throw new UsageError(`${path} is larger than ${maxBytes} bytes`);
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * The change a `--report` run measures, read from the CI's variables before anything is
 * measured, so a job that cannot report fails at once (exit 2) rather than after its runs.
 */
export function forgeChangeFor(flags: ForgeReportFlags, env: Env): CiChange | undefined {
  const forge = oneOf(flags.report, FORGES, 'report');
  if (flags['base-url'] !== undefined && forge === undefined) throw new UsageError('--base-url goes with --report');
  if (forge === undefined) return undefined;
  if (!flags.ci) throw new UsageError('--report goes with --ci');
  return ciChangeOf(forge, env, readBounded);
}

/** The comparison of the head snapshot with the base URL's latest snapshot not made for a pull request. */
async function comparisonOf(
  client: ApiClient,
  url: string,
  baseUrl: string,
  date: string,
): Promise<ChangeReport['comparison']> {
  try {
    return { baseUrl, compared: await client.compare({ url, baseUrl, from: 'latest', to: date }) };
  } catch (error) {
    // No base yet (a first run, a base URL not in perfwatch): the report shows the head alone.
    if (error instanceof ApiClientError && error.httpStatus === 404)
      return { unavailable: error.envelope?.errors.join('; ') || error.message };
    throw error;
  }
}

function outcomeLine(forge: string, outcome: ForgeOutcome): string {
  return outcome.ok ? `${forge}: ${outcome.detail}` : `${forge}: NOT SENT ${outcome.detail}`;
}

/**
 * Reports a measured change to its forge: a status per cell and the pull request's comment.
 * What the forge refused (a rate limit, a 422, a bad token) is printed and does not change the
 * exit code: the budgets decide it.
 */
export async function sendForgeReport(
  { client, io, server }: { client: ApiClient; io: ClientIo; server: string },
  change: CiChange,
  measured: { url: string; date: string; result: AuditResult; budgets: BudgetReport; baseUrl: string },
): Promise<ForgeOutcome[]> {
  const { url, date, baseUrl } = measured;
  const comparison = await comparisonOf(client, url, baseUrl, date).catch(
    (error: Error) => ({ unavailable: `the comparison failed: ${error.message}` }) as const,
  );
  const from = 'compared' in comparison ? comparison.compared.from : 'latest';
  const report: ChangeReport = {
    ...measured,
    comparison,
    revision: { commit: change.commit, branch: change.branch, pullRequest: change.pullRequest },
    link: (cell) => compareViewLink(server, { url, baseUrl, from, to: date, ...cell }),
  };
  const outcomes = await reportToForge(forgeClient(change.target, io.fetch ?? fetch), {
    commit: change.commit,
    pullRequest: change.pullRequest,
    statuses: commitStatuses(report),
    comment: reportComment(report),
    marker: reportMarker(baseUrl),
  });
  for (const outcome of outcomes) io.err.write(`${outcomeLine(change.target.forge, outcome)}\n`);
  return outcomes;
}
