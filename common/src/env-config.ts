import type { z } from 'zod';
import { ConfigError } from './errors.ts';

/**
 * Settings whose values are secrets or may carry one (a key, a token, a seed, a URL or URI with
 * credentials in it): an error names them and never repeats their value, since errors end up
 * in logs, terminals and CI output.
 */
const SECRET_SETTING = /(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASS|SEED|NKEY|CREDENTIALS?|AUTH|URI|URL|URLS)(?:_|$)/;

/**
 * Parses environment variables with a zod object schema and reports every bad variable
 * at once, so an operator fixes a deployment in one round instead of one per restart.
 */
export function parseEnv<S extends z.ZodType>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    const value = issue.path.length === 1 ? env[String(issue.path[0])] : undefined;
    if (value === undefined) return `${name}: ${issue.message}`;
    if (SECRET_SETTING.test(name)) return `${name} (value not shown: it may hold a secret): ${issue.message}`;
    return `${name}=${JSON.stringify(value)}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}
