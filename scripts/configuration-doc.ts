/**
 * Writes docs/configuration.md from the settings schemas: `npm run docs:config`. Each setting is
 * declared once, in a group of its topic (common/src/settings, gateway/src/settings,
 * agent/src/settings, client/src/client-config.ts, local/src/config.ts); each program's schema
 * says which it reads and with what default. test/docs/configuration-doc.test.ts fails when the
 * committed document differs from what this writes.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import {
  listeningSettings,
  loggingSettings,
  natsSettings,
  targetSettings,
  type ProgramSettings,
  type SettingGroup,
} from '@perfwatch/common';
import { agentIdentitySettings } from '../agent/src/settings/agent-identity.ts';
import { chromeRunSettings } from '../agent/src/settings/chrome-runs.ts';
import { agentSettings } from '../agent/src/config.ts';
import { clientProgramSettings, clientSettings } from '../client/src/client-config.ts';
import { gatewaySettings } from '../gateway/src/config.ts';
import { adminSettings } from '../gateway/src/admin/admin-config.ts';
import { artifactSettings } from '../gateway/src/settings/artifacts.ts';
import { credentialSettings } from '../gateway/src/settings/credentials.ts';
import { cruxSettings } from '../gateway/src/settings/crux.ts';
import { forgeSettings } from '../gateway/src/settings/forge.ts';
import { httpSettings } from '../gateway/src/settings/http.ts';
import { limitSettings } from '../gateway/src/settings/limits.ts';
import { pageMetricsSettings } from '../gateway/src/settings/page-metrics.ts';
import { schedulingSettings } from '../gateway/src/settings/scheduling.ts';
import { ssoSettings } from '../gateway/src/settings/sso.ts';
import { storeSettings } from '../gateway/src/settings/store.ts';
import { testingSettings } from '../gateway/src/settings/testing.ts';
import { updateSettings } from '../gateway/src/settings/updates.ts';
import { webhookSettings } from '../gateway/src/settings/webhooks.ts';
import { startOnlySettings, startSettings } from '../local/src/config.ts';

export const DOC_PATH = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

/** Every group, in the order the document lists their topics. */
export const SETTING_GROUPS: readonly SettingGroup[] = [
  listeningSettings,
  natsSettings,
  storeSettings,
  loggingSettings,
  targetSettings,
  agentIdentitySettings,
  chromeRunSettings,
  updateSettings,
  limitSettings,
  httpSettings,
  schedulingSettings,
  webhookSettings,
  forgeSettings,
  cruxSettings,
  credentialSettings,
  ssoSettings,
  artifactSettings,
  pageMetricsSettings,
  startOnlySettings,
  clientSettings,
  testingSettings,
];

/** Every program, with the short name the topic tables use. */
export const PROGRAMS: ReadonlyArray<{ short: string; settings: ProgramSettings }> = [
  { short: 'gateway', settings: gatewaySettings },
  { short: 'agent', settings: agentSettings },
  { short: 'start', settings: startSettings },
  { short: 'admin', settings: adminSettings },
  { short: 'client', settings: clientProgramSettings },
];

/** The value a schema gives an unset variable, looking through optional, default and transforms. */
function defaultOf(schema: z.ZodType): { value: unknown } | undefined {
  const def = schema._zod.def as { type: string; defaultValue?: unknown; in?: z.ZodType; innerType?: z.ZodType };
  if (def.type === 'default') return { value: def.defaultValue };
  if (def.type === 'pipe' && def.in) return defaultOf(def.in);
  if (def.type === 'optional' && def.innerType) return defaultOf(def.innerType);
  return undefined;
}

function defaultText(program: ProgramSettings, name: string): string {
  const note = program.notes?.[name];
  if (note) return note;
  const schema = program.schema.shape[name]!;
  const found = defaultOf(schema);
  if (found === undefined) return schema.safeParse(undefined).success ? 'unset' : 'required';
  if (found.value === '') return 'empty';
  return `\`${String(found.value)}\``;
}

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

function descriptionOf(group: SettingGroup, name: string): string {
  const schema = group.settings[name]!;
  const description = schema.description;
  if (!description) throw new Error(`${name} (${group.topic}) has no description: add .describe() to its schema`);
  return description;
}

function topicSection(group: SettingGroup): string[] {
  const rows = Object.keys(group.settings).map((name) => {
    const readers = PROGRAMS.filter(({ settings }) => name in settings.schema.shape);
    const defaults = readers.map(({ short, settings }) => ({ short, text: defaultText(settings, name) }));
    const same = defaults.every(({ text }) => text === defaults[0]?.text);
    const shown = same ? (defaults[0]?.text ?? '') : defaults.map(({ short, text }) => `${short}: ${text}`).join('; ');
    const readBy = readers.map(({ short }) => short).join(', ');
    return `| \`${name}\` | ${cell(shown)} | ${readBy} | ${cell(descriptionOf(group, name))} |`;
  });
  return [`### ${group.topic}`, '', '| Setting | Default | Read by | What it does |', '|---|---|---|---|', ...rows, ''];
}

function programSection({ short, settings }: { short: string; settings: ProgramSettings }): string[] {
  const names = Object.keys(settings.schema.shape);
  const lines = SETTING_GROUPS.flatMap((group) => {
    const read = names.filter((name) => name in group.settings);
    return read.length === 0 ? [] : [`- ${group.topic}: ${read.map((name) => `\`${name}\``).join(', ')}`];
  });
  return [`### \`${settings.program}\` (${short})`, '', ...lines, ''];
}

function aliasSection(): string[] {
  const rows = PROGRAMS.flatMap(({ short, settings }) =>
    Object.entries(settings.aliases ?? {}).map(([old, name]) => `| \`${old}\` | \`${name}\` | ${short} |`),
  );
  if (rows.length === 0) return [];
  return [
    '## Old names',
    '',
    'Still read when the new name is unset, with a warning in the log at start; set the new name instead.',
    '',
    '| Old name | New name | Read by |',
    '|---|---|---|',
    ...rows,
    '',
  ];
}

/** The whole document. */
export function configurationDoc(): string {
  return [
    '# Configuration',
    '',
    '<!-- Generated by `npm run docs:config` (scripts/configuration-doc.ts) from the settings schemas;',
    '     edit the schemas, not this file: test/docs/configuration-doc.test.ts fails when they differ. -->',
    '',
    'Every perfwatch program reads its settings from environment variables, checked when it starts: a',
    'bad value stops it with every problem named at once (values of secrets are never repeated). Each',
    'setting has one name, one check and one description, wherever it is read; a default may differ',
    'between programs, as shown. "unset" means the setting is off unless given.',
    '',
    '## By program',
    '',
    ...PROGRAMS.flatMap(programSection),
    '## By topic',
    '',
    ...SETTING_GROUPS.flatMap(topicSection),
    ...aliasSection(),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(DOC_PATH, configurationDoc());
  console.log(`wrote ${DOC_PATH}`);
}
