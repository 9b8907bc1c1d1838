import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { EXIT, type ExitCode } from './exit-codes.ts';

export type Env = Readonly<Record<string, string | undefined>>;

/** Where a program writes: results to `out`, problems (and progress) to `err`. */
export interface CliIo {
  out: { write(text: string): unknown };
  err: { write(text: string): unknown };
}

/** A command's options as node:util's parseArgs reads them. */
export type CommandOptions = ParseArgsOptionsConfig;
export type OptionValues<O extends CommandOptions> = ReturnType<
  typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>
>['values'];

/** One command of a program's table: how it is called, what it does, what it takes. */
export interface Command<C, O extends CommandOptions = CommandOptions> {
  /** How it is called after its name, one line each way (`NAME [--expires WHEN]`). */
  synopsis: readonly string[];
  /** What it does, in the lines the usage shows. */
  summary: readonly string[];
  options: O;
  /** The positional arguments it takes (or one of several counts), and what to say when it is given others. */
  args: { count: number | readonly number[]; refused?: string };
  run(call: { args: string[]; values: OptionValues<O>; context: C }): Promise<ExitCode>;
}

/** A command line that is wrong: the program prints the message and its usage, and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A command typed by its own options, put in a table of commands with others. */
export function defineCommand<C, O extends CommandOptions>(spec: Command<C, O>): Command<C> {
  return spec;
}

/** A command-line program: its table of commands and what they share. */
export interface Program<C> {
  /** The words before a command's name (`admin` for `perfwatch admin create-user`). */
  path: readonly string[];
  commands: Readonly<Record<string, Command<C>>>;
  usage: string;
  /** How its error lines begin: `perfwatch admin`, `perfwatch update`. */
  label(command: string): string;
  /** What the commands work with, made once the command line is known to be right; closed after. */
  open(env: Env, values: Readonly<Record<string, unknown>>): Promise<{ context: C; close(): Promise<void> }>;
  /** The exit code an error stands for (undefined: a crash, thrown on to the entry). */
  exitFor(error: unknown): ExitCode | undefined;
}

/**
 * Runs `argv` (the words after `perfwatch`) through a program's table: `--help` and a missing or
 * unknown command answered with the usage, options parsed for the command named, then the
 * command. Every program answers its command line this one way.
 */
export async function runCommandLine<C>(program: Program<C>, argv: readonly string[], env: Env, io: CliIo) {
  const words = argv.slice(program.path.length);
  if (words[0] === undefined || words[0] === '--help' || words[0] === '-h') {
    (words[0] ? io.out : io.err).write(`${program.usage}\n`);
    return words[0] ? EXIT.ok : EXIT.usage;
  }
  const [name, rest] = commandAndRest(words, program.commands);
  const label = program.label(name);
  try {
    const command = Object.hasOwn(program.commands, name) ? program.commands[name] : undefined;
    if (!command) throw new UsageError(`unknown command ${name}`);
    const { values, positionals } = parseCommandLine(command, rest);
    if (values['help']) {
      io.out.write(`${program.usage}\n`);
      return EXIT.ok;
    }
    const counts = [command.args.count].flat();
    if (!counts.includes(positionals.length))
      throw new UsageError(command.args.refused ?? `${name} takes ${counts.join(' or ')} argument(s)`);
    const { context, close } = await program.open(env, values);
    try {
      return await command.run({ args: positionals, values, context });
    } finally {
      await close();
    }
  } catch (error) {
    const code = error instanceof UsageError ? EXIT.usage : program.exitFor(error);
    if (code === undefined) throw error;
    io.err.write(`${label}: ${(error as Error).message}\n${code === EXIT.usage ? `${program.usage}\n` : ''}`);
    return code;
  }
}

/**
 * The command's name and the words around it. Options may come before the name
 * (`perfwatch admin --json list-projects`), as the programs took them before they shared this
 * table: the first word that names a command is the command then.
 */
function commandAndRest(words: readonly string[], commands: Readonly<Record<string, unknown>>): [string, string[]] {
  const at = words[0]!.startsWith('-') ? words.findIndex((word) => Object.hasOwn(commands, word)) : 0;
  if (at <= 0) return [words[0]!, words.slice(1)];
  return [words[at]!, [...words.slice(0, at), ...words.slice(at + 1)]];
}

/** Every command takes --help (-h): the program's usage, exit 0. */
const HELP = { help: { type: 'boolean', short: 'h', default: false } } satisfies CommandOptions;

function parseCommandLine<C>(command: Command<C>, args: string[]) {
  try {
    return parseArgs({ args, options: { ...command.options, ...HELP }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * The usage lines of a table whose commands are listed by name: each synopsis, and the summary
 * beside it when it fits in the name column, under it otherwise.
 */
export function commandListing(commands: Readonly<Record<string, Command<unknown>>>, column = 33): string[] {
  return Object.entries(commands).flatMap(([name, { synopsis, summary }]) => {
    const calls = synopsis.map((line) => `  ${[name, line].filter(Boolean).join(' ')}`);
    const [first, ...more] = summary;
    const indent = ' '.repeat(column + 2);
    const last = calls.at(-1)!;
    if (first !== undefined && calls.length === 1 && last.length < column + 1)
      return [`${last.padEnd(column + 2)}${first}`, ...more.map((line) => `${indent}${line}`)];
    return [...calls, ...summary.map((line) => `${indent}${line}`)];
  });
}
