import type { ParseArgsOptionsConfig } from 'node:util';
import {
  defineCommand,
  DEVICES,
  EXIT,
  parseLocationList,
  SECTIONS,
  UsageError,
  type CompareResult,
  type Section,
} from '@perfwatch/common';
import { COMMON_OPTIONS, oneOf, type ClientContext } from './client-command.ts';
import { auditResultTable, compareTable, overviewTable } from './result-tables.ts';
import { REVISION_OPTIONS, resultHeading, revisionOfFlags, revisionText } from './revision-flags.ts';

const CELL_OPTIONS = {
  ...COMMON_OPTIONS,
  device: { type: 'string' },
  location: { type: 'string' },
} satisfies ParseArgsOptionsConfig;

const AUDIT_OPTIONS = { ...CELL_OPTIONS, date: { type: 'string' } } satisfies ParseArgsOptionsConfig;

const COMPARE_OPTIONS = {
  ...CELL_OPTIONS,
  'base-url': { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
} satisfies ParseArgsOptionsConfig;

const OVERVIEW_OPTIONS = {
  ...COMMON_OPTIONS,
  from: { type: 'string' },
  to: { type: 'string' },
  domain: { type: 'string' },
  section: { type: 'string', multiple: true, default: [] },
  'update-type': { type: 'string' },
  ...REVISION_OPTIONS,
} satisfies ParseArgsOptionsConfig;

/** `--location a,b` as the API takes it (not given: every location). */
const locationsOf = (text: string | undefined) => (text === undefined ? undefined : parseLocationList(text));

export const auditCommand = defineCommand<ClientContext, typeof AUDIT_OPTIONS>({
  synopsis: ['URL --date yyyy-MM-ddTHH:mm:ss [--device D] [--location a,b] [--json]'],
  summary: ['read a stored snapshot'],
  options: AUDIT_OPTIONS,
  args: { count: 1, refused: 'audit takes one URL' },
  run: async ({ args: [url], values, context: { client, io } }) => {
    if (!values.date) throw new UsageError('audit needs --date yyyy-MM-ddTHH:mm:ss (perfwatch update prints it)');
    const result = await client.audit({
      url: url!,
      date: values.date,
      device: oneOf(values.device, DEVICES, 'device'),
      location: locationsOf(values.location),
    });
    io.out.write(
      values.json
        ? `${JSON.stringify(result)}\n`
        : `${resultHeading(url!, values.date, result)}\n${auditResultTable(result)}\n`,
    );
    return EXIT.ok;
  },
});

export const compareCommand = defineCommand<ClientContext, typeof COMPARE_OPTIONS>({
  synopsis: [
    'URL --from DATE|latest --to DATE|latest [--base-url URL] [--device D] [--location a,b] [--json]',
    'URL DATE_A DATE_B [--base-url URL] [--device D] [--location a,b] [--json]',
  ],
  summary: [
    "two snapshots side by side: differences, and whether each is beyond noise; --from is --base-url's",
    "(default URL's), --to URL's; latest: the newest (--from: not from a pull request, older than --to's on one URL)",
  ],
  options: COMPARE_OPTIONS,
  args: {
    count: [1, 3],
    refused:
      'compare takes a URL and two snapshot dates (--from and --to, or DATE_A DATE_B; perfwatch update prints them)',
  },
  run: async ({ args: [url, ...dates], values, context: { client, io } }) => {
    if (dates.length > 0 && (values.from !== undefined || values.to !== undefined))
      throw new UsageError('compare takes its dates as DATE_A DATE_B or as --from and --to, not both');
    const [from, to] = dates.length > 0 ? dates : [values.from, values.to];
    if (!from || !to) throw new UsageError('compare needs --from and --to (yyyy-MM-ddTHH:mm:ss or latest)');
    const result = await client.compare({
      url: url!,
      baseUrl: values['base-url'],
      from,
      to,
      device: oneOf(values.device, DEVICES, 'device'),
      location: locationsOf(values.location),
    });
    io.out.write(values.json ? `${JSON.stringify(result)}\n` : `${compareSides(result)}${compareTable(result)}\n`);
    return EXIT.ok;
  },
});

/** Which project and code change each side is, when that is more than the table's heading says. */
function compareSides(result: CompareResult): string {
  if (result.baseUrl === undefined && !result.fromRevision && !result.toRevision) return '';
  return [
    `base: ${result.baseUrl ?? result.url} at ${result.from}${revisionText(result.fromRevision)}`,
    `head: ${result.url} at ${result.to}${revisionText(result.toRevision)}`,
    '',
  ].join('\n');
}

export const overviewCommand = defineCommand<ClientContext, typeof OVERVIEW_OPTIONS>({
  synopsis: [
    '--from yyyy-MM-dd --to yyyy-MM-dd [--domain D] [--section S]... [--update-type T]\n' +
      '                            [--commit SHA] [--branch NAME] [--pull-request N] [--json]',
  ],
  summary: ['KPI records over a date range'],
  options: OVERVIEW_OPTIONS,
  args: { count: 0, refused: 'overview takes no URL; filter with --domain' },
  run: async ({ values, context: { client, io } }) => {
    if (!values.from || !values.to) throw new UsageError('overview needs --from and --to (yyyy-MM-dd)');
    const records = await client.overview({
      startDate: values.from,
      endDate: values.to,
      domain: values.domain,
      updateType: oneOf(values['update-type'], ['manual', 'scheduled', 'ci'] as const, 'update-type'),
      sections:
        values.section.length > 0
          ? values.section.map((s) => oneOf(s.toLowerCase(), SECTIONS, 'section') as Section)
          : undefined,
      // The snapshots of one code change: the same flags and checks as `perfwatch update`.
      ...revisionOfFlags(values),
    });
    io.out.write(
      values.json ? `${JSON.stringify(records)}\n` : `${overviewTable(records)}\n${records.length} record(s)\n`,
    );
    return EXIT.ok;
  },
});
