import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEVICES,
  EXIT,
  UsageError,
  type ExitCode,
  type SiteUpdateAnswer,
  type SiteUpdateRequest,
  type SiteUpdateStatusView,
  type SiteView,
  type UpdateStatusView,
} from '@perfwatch/common';
import { ApiClientError } from './api-client.ts';
import { oneOf, type ClientIo } from './client-command.ts';
import { revisionOfFlags, type RevisionFlags } from './revision-flags.ts';
import { readPagesInput, siteByOrigin, siteOriginOf } from './site-pages-input.ts';
import { siteUpdateJunitXml } from './site-update-junit.ts';
import { planText, sitePagesTable, siteUpdateProgress, siteVerdictText } from './site-update-progress.ts';

/** The options `perfwatch update` takes for its site form (`--site ORIGIN`) alone. */
export const SITE_UPDATE_OPTIONS = {
  site: { type: 'string' },
  pages: { type: 'string' },
  all: { type: 'boolean', default: false },
  plan: { type: 'boolean', default: false },
} as const;

/** The flags the site form reads; those of the URL form it refuses are listed in URL_ONLY. */
export interface SiteUpdateFlags extends RevisionFlags {
  site?: string;
  pages?: string;
  all: boolean;
  plan: boolean;
  device?: string;
  ci: boolean;
  json: boolean;
  junit?: string;
  timeout?: string;
}

/** What the site form asks of the API (ApiClient has each). */
export interface SiteUpdateClient {
  sites(): Promise<SiteView[]>;
  siteUpdate(id: string, body: SiteUpdateBody): Promise<SiteUpdateAnswer>;
  updateStatus(id: string): Promise<UpdateStatusView | SiteUpdateStatusView>;
}
type SiteUpdateBody = Partial<SiteUpdateRequest>;

/**
 * Flags of the URL form that mean nothing for a site: its pages are held to the budgets set on
 * the site and its projects, on the server; a forge report and an annotation name one URL.
 */
const URL_ONLY = [
  'async',
  'wait',
  'budget',
  'max-regression',
  'budget-file',
  'annotate',
  'annotate-link',
  'report',
  'base-url',
] as const;

const given = (value: unknown) => value !== undefined && value !== false && !(Array.isArray(value) && !value.length);

/** The URL of the URL form, its command line checked for flags of the site form. */
export function singleUrl(args: readonly string[], values: Readonly<Record<string, unknown>>): string {
  for (const name of ['pages', 'all', 'plan'] as const)
    if (given(values[name])) throw new UsageError(`--${name} goes with --site ORIGIN`);
  if (args.length !== 1) throw new UsageError('update takes one URL, or --site ORIGIN');
  return args[0]!;
}

/** A site update is long: hundreds of pages take a fleet's while, more than one URL's 15 minutes. */
const SITE_TIMEOUT_S = 60 * 60;

/** The request a command line asks for, checked before anything is sent. */
async function requestOf(
  args: readonly string[],
  flags: SiteUpdateFlags & Record<string, unknown>,
  io: ClientIo,
): Promise<{ origin: string; body: SiteUpdateBody; timeoutMs: number }> {
  if (args.length > 0) throw new UsageError('update --site takes no URL: list pages with --pages FILE');
  for (const name of URL_ONLY)
    if (given(flags[name])) throw new UsageError(`--${name} goes with update URL, not --site`);
  if (flags.pages !== undefined && flags.all) throw new UsageError('give --pages or --all, not both');
  if (flags.plan && flags.junit) throw new UsageError('--junit needs the result: leave out --plan');
  const timeoutMs = (flags.timeout === undefined ? SITE_TIMEOUT_S : Number(flags.timeout)) * 1000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new UsageError('--timeout is in seconds, a positive number');
  const origin = siteOriginOf(flags.site!);
  const device = oneOf(flags.device, DEVICES, 'device');
  const revision = revisionOfFlags(flags);
  const pages =
    flags.pages === undefined
      ? undefined
      : await readPagesInput(flags.pages, origin, { stdin: () => io.stdin ?? process.stdin });
  const body: SiteUpdateBody = {
    ...(pages ? { pages } : {}),
    ...(flags.all ? { all: true } : {}),
    ...(device ? { devices: [device] } : {}),
    updateType: flags.ci ? 'ci' : 'manual',
    ...revision,
  };
  return { origin, body, timeoutMs };
}

/**
 * Asks the API for a site update; a 400 is the command line's (a page the site does not have),
 * a 429 the caller's limit: the plan's numbers said, nothing queued, the refusal's exit code.
 */
async function askSiteUpdate(
  client: SiteUpdateClient,
  siteId: string,
  body: SiteUpdateBody,
  io: ClientIo,
): Promise<SiteUpdateAnswer | ExitCode> {
  try {
    return await client.siteUpdate(siteId, body);
  } catch (error) {
    if (!(error instanceof ApiClientError)) throw error;
    const { envelope } = error;
    if (error.httpStatus === 400 && envelope) throw new UsageError([envelope.message, ...envelope.errors].join(' '));
    if (error.httpStatus !== 429) throw error;
    const said = envelope ? [envelope.message, ...envelope.errors.map((line) => `  ${line}`)] : [error.message];
    io.err.write(`perfwatch update: site update refused, nothing queued: ${said.join('\n')}\n`);
    return EXIT.failed;
  }
}

/** `perfwatch update --site ORIGIN …`: the plan, then (unless only planned) the update, its progress and verdict. */
export async function siteUpdate(
  { client, io }: { client: SiteUpdateClient; io: ClientIo },
  args: readonly string[],
  flags: SiteUpdateFlags & Record<string, unknown>,
): Promise<ExitCode> {
  const { origin, body, timeoutMs } = await requestOf(args, flags, io);
  const site = siteByOrigin(await client.sites(), origin);
  const planned = await askSiteUpdate(client, site.id, { ...body, planOnly: true }, io);
  if (typeof planned === 'number') return planned;
  if (flags.plan) {
    io.out.write(flags.json ? `${JSON.stringify(planned)}\n` : `${site.origin}: ${planText(planned.plan)}\n`);
    return EXIT.ok;
  }
  io.err.write(`${site.origin}: ${planText(planned.plan)}\n`);
  const started = Date.now();
  const answer = await askSiteUpdate(client, site.id, body, io);
  if (typeof answer === 'number') return answer;
  if (answer.id === null) throw new Error('the gateway queued no site update and gave no reason');
  const waited = await waitForSiteUpdate(client, answer.id, { pollMs: io.pollMs ?? 2_000, timeoutMs, io });
  const status = waited.status;
  io.out.write(flags.json ? `${JSON.stringify(status)}\n` : `${sitePagesTable(status)}\n`);
  if (flags.junit) await writeFile(flags.junit, siteUpdateJunitXml(status, (Date.now() - started) / 1000));
  const verdict = siteVerdictText(status, flags.ci ? 'site gate' : 'site update');
  io.err.write(`${waited.timedOut ? `site update ${status.id} ${waited.timedOut}\n` : ''}${verdict}\n`);
  return exitOf(status, flags.ci, waited.timedOut !== undefined);
}

/**
 * The exit code: 1 (EXIT.failed, as `update URL --ci` gives for a failed budget or a failed
 * update) when a page was not measured, or, for the gate, when any page failed a budget.
 */
function exitOf(status: SiteUpdateStatusView, gate: boolean, timedOut: boolean): ExitCode {
  const unmeasured = timedOut || status.status === 'failed' || status.pages.some((page) => page.status !== 'done');
  const overBudget = status.pages.some((page) => (page.budgetFailures ?? 0) > 0);
  return unmeasured || (gate && overBudget) ? EXIT.failed : EXIT.ok;
}

/**
 * Polls a site update until it ends, drawing each page as it ends. Past the deadline the
 * status as it stands is the answer, with why: the pages measured so far still get their table.
 */
async function waitForSiteUpdate(
  client: SiteUpdateClient,
  id: string,
  { pollMs, timeoutMs, io }: { pollMs: number; timeoutMs: number; io: ClientIo },
): Promise<{ status: SiteUpdateStatusView; timedOut?: string }> {
  const progress = siteUpdateProgress(io.err);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await client.updateStatus(id);
    if (!('kind' in status) || status.kind !== 'site') throw new Error(`update ${id} is not a site update`);
    progress.show(status);
    if (status.status === 'done' || status.status === 'failed') return { status };
    if (Date.now() + pollMs > deadline)
      return { status, timedOut: `is still ${status.status} after ${Math.round(timeoutMs / 1000)} s` };
    await sleep(pollMs);
  }
}
