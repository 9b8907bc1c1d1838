import type { z } from 'zod';

/**
 * One topic's settings (environment variables): each a zod schema holding its check, its
 * default and, through `.describe()`, what it does. A setting is declared in one group only;
 * programs compose the groups they read, and docs/configuration.md is generated from them.
 */
/** Settings by name (zod's classic schemas: they carry `.description`). */
export type SettingShape = Record<string, z.ZodType>;

export interface SettingGroup<S extends SettingShape = SettingShape> {
  topic: string;
  settings: S;
}

export function settingGroup<S extends SettingShape>(topic: string, settings: S): SettingGroup<S> {
  return { topic, settings };
}

/**
 * What a program reads: its schema (composed from groups, a program-specific default put on a
 * group's setting where programs differ) and the old names it still accepts.
 */
export interface ProgramSettings<S extends SettingShape = SettingShape> {
  /** The command that runs the program, e.g. `perfwatch gateway`. */
  program: string;
  schema: z.ZodObject<S>;
  /** Old name → the name that replaced it; the old one is read when the new one is unset. */
  aliases?: Readonly<Record<string, string>>;
  /** A word on a setting whose default this program works out rather than states. */
  notes?: Readonly<Record<string, string>>;
}

export function programSettings<S extends SettingShape>(settings: ProgramSettings<S>): ProgramSettings<S> {
  return settings;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The environment with each deprecated name's value under its new name (the new name winning). */
export function withAliases(env: Env, aliases: Readonly<Record<string, string>> = {}): Env {
  const renamed: Record<string, string | undefined> = { ...env };
  for (const [old, name] of Object.entries(aliases))
    if (renamed[name] === undefined && env[old] !== undefined) renamed[name] = env[old];
  return renamed;
}

/** The deprecated names set in the environment, for a log line asking for the new ones. */
export function deprecatedNamesIn(
  env: Env,
  aliases: Readonly<Record<string, string>> = {},
): Array<{ deprecated: string; use: string }> {
  return Object.entries(aliases)
    .filter(([old]) => env[old] !== undefined)
    .map(([deprecated, use]) => ({ deprecated, use }));
}
