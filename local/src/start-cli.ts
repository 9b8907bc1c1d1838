import {
  ConfigError,
  defineCommand,
  EXIT,
  runCommandLine,
  StartupError,
  type CliIo,
  type Env,
  type ExitCode,
  type Program,
} from '@perfwatch/common';
import { startPerfwatch } from './main.ts';

const START_COMMANDS = {
  start: defineCommand<Env, Record<never, never>>({
    synopsis: [''],
    summary: [
      'gateway + a local agent + local NATS and database, with a demo project; NATS_URL and',
      'MONGODB_URI switch to real ones (settings: docs/configuration.md)',
    ],
    options: {},
    args: { count: 0 },
    run: async ({ context: env }) => {
      // Resolves once a signal has stopped everything in order.
      await startPerfwatch(env);
      return EXIT.ok;
    },
  }),
};

const START_USAGE = `usage: perfwatch start\n${START_COMMANDS.start.summary.map((line) => `  ${line}`).join('\n')}`;

/** A wrong setting is a usage error; a part that cannot start (NATS refusing its credentials) a failure. */
function startExitFor(error: unknown): ExitCode | undefined {
  if (error instanceof ConfigError) return EXIT.usage;
  return error instanceof StartupError ? EXIT.failed : undefined;
}

const startProgram: Program<Env> = {
  path: [],
  commands: START_COMMANDS,
  usage: START_USAGE,
  label: () => 'perfwatch start',
  exitFor: startExitFor,
  open: async (env) => ({ context: env, close: async () => {} }),
};

/** `perfwatch start` (`argv` the words after `perfwatch`). Returns the exit code once stopped. */
export function main(
  argv: readonly string[],
  env: Env,
  io: CliIo = { out: process.stdout, err: process.stderr },
): Promise<ExitCode> {
  return runCommandLine(startProgram, argv, env, io);
}
