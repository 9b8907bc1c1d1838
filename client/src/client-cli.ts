import {
  BudgetSpecError,
  ConfigError,
  EXIT,
  LocationListError,
  parseEnv,
  runCommandLine,
  UsageError,
  type Env,
  type ExitCode,
  type Program,
} from '@perfwatch/common';
import { createApiClient } from './api-client.ts';
import { clientProgramSettings } from './client-config.ts';
import type { ClientContext, ClientIo } from './client-command.ts';
import { flowCommand } from './flow-command.ts';
import { FlowFileError } from './flow-file.ts';
import { auditCommand, compareCommand, overviewCommand } from './read-commands.ts';
import { updateCommand } from './update-command.ts';

/** The client's commands, each a word of its own after `perfwatch`. */
const CLIENT_COMMANDS = {
  update: updateCommand,
  audit: auditCommand,
  compare: compareCommand,
  overview: overviewCommand,
  flow: flowCommand,
};

export type ClientVerb = keyof typeof CLIENT_COMMANDS;
export const CLIENT_VERBS = Object.keys(CLIENT_COMMANDS) as ClientVerb[];

export const CLIENT_USAGE = [
  'usage:',
  ...Object.entries(CLIENT_COMMANDS).flatMap(([name, { synopsis }]) =>
    synopsis.map((line) => `  perfwatch ${name} ${line}`),
  ),
  'common: --server URL (PERFWATCH_SERVER, default http://127.0.0.1:8080), --token TOKEN (PERFWATCH_TOKEN)',
  'budgets: performance, accessibility, best-practices, seo (scores 0-100, floors);',
  "         lcp, fcp, tbt, si, tti, ttfb (ms), cls, bytes (ceilings); a flow's step by <step>.<key>",
  "         (--budget 'add to cart.inp=200'; inp, a timespan's, only per step; docs/flows.md)",
  '--max-regression: against the previous snapshot, score points or percent for metrics',
  '--ci without budget flags checks the budgets the project has on the server (perfwatch admin set-budgets)',
  "--annotate: a deploy marker at the snapshot's date, drawn on the dashboard's trend plots",
  '--report: commit statuses and one pull request comment on the forge the CI job runs for, compared with',
  "          --base-url's latest snapshot not made for a pull request (docs/forges/); never changes the exit code",
  `exit: ${EXIT.ok} passed, ${EXIT.failed} a budget failed or the update failed, ${EXIT.usage} usage, ${EXIT.api} the API could not be used`,
].join('\n');

/** Wrong flags, budgets, locations, flow files or settings are usage errors; anything else, the API could not be used. */
function clientExitFor(error: unknown): ExitCode {
  const usage = [BudgetSpecError, LocationListError, ConfigError, FlowFileError];
  return usage.some((kind) => error instanceof kind) ? EXIT.usage : EXIT.api;
}

function clientProgram(io: ClientIo): Program<ClientContext> {
  return {
    path: [],
    commands: CLIENT_COMMANDS,
    usage: CLIENT_USAGE,
    label: (command) => `perfwatch ${command}`,
    exitFor: clientExitFor,
    async open(env, values) {
      const config = parseEnv(clientProgramSettings.schema, env);
      const given = (name: string) => (typeof values[name] === 'string' ? values[name] : undefined);
      const token = given('token') ?? config.PERFWATCH_TOKEN;
      if (!token) throw new UsageError('no API token: pass --token or set PERFWATCH_TOKEN');
      const server = given('server') ?? config.PERFWATCH_SERVER;
      const client = createApiClient({ server, token, fetch: io.fetch });
      return { context: { client, io, server, env }, close: async () => {} };
    },
  };
}

/** `perfwatch update|audit|compare|overview|flow …` (`argv` the words after `perfwatch`). Returns the exit code. */
export function main(
  argv: readonly string[],
  env: Env,
  io: ClientIo = { out: process.stdout, err: process.stderr },
): Promise<ExitCode> {
  return runCommandLine(clientProgram(io), argv, env, io);
}
