import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { parseEnv } from './env-config.ts';
import { ConfigError } from './errors.ts';

const schema = z.object({
  PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  MODE: z.enum(['a', 'b']),
  NAME: z.string().min(1).default('x'),
});

describe('parseEnv', () => {
  it('applies defaults and coerces', () => {
    expect(parseEnv(schema, { MODE: 'a' })).toEqual({ PORT: 8080, MODE: 'a', NAME: 'x' });
    expect(parseEnv(schema, { MODE: 'b', PORT: '9000' }).PORT).toBe(9000);
  });

  it('reports every bad variable at once, with the value given', () => {
    let caught: unknown;
    try {
      parseEnv(schema, { PORT: 'eighty', NAME: '' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems;
    expect(problems).toHaveLength(3);
    expect(problems.join('\n')).toMatch(/PORT="eighty"/);
    expect(problems.join('\n')).toMatch(/MODE:/);
    expect(problems.join('\n')).toMatch(/NAME="":/);
  });

  it('never repeats the value of a setting that is or may carry a secret', () => {
    const secrets = z.object({
      MONGODB_URI: z.string().regex(/^mongodb:\/\//, 'must be a mongodb:// URI'),
      CRUX_API_KEY: z.string().min(50),
      PERFWATCH_AGENT_NKEY: z.string().startsWith('U'),
      NATS_URL: z.url(),
      PERFWATCH_TOKEN: z.string().startsWith('pw_'),
    });
    let caught: unknown;
    try {
      parseEnv(secrets, {
        MONGODB_URI: 'mongo://admin:hunter2@db/',
        CRUX_API_KEY: 'AIzaSECRET',
        PERFWATCH_AGENT_NKEY: 'SUSECRETSEED',
        NATS_URL: 'nats://u:hunter2@ nats',
        PERFWATCH_TOKEN: 'tok_hunter2',
      });
    } catch (error) {
      caught = error;
    }
    const problems = (caught as ConfigError).problems.join('\n');
    expect((caught as ConfigError).problems).toHaveLength(5);
    for (const name of ['MONGODB_URI', 'CRUX_API_KEY', 'PERFWATCH_AGENT_NKEY', 'NATS_URL', 'PERFWATCH_TOKEN'])
      expect(problems).toContain(`${name} (value not shown: it may hold a secret):`);
    expect(problems).not.toMatch(/hunter2|SECRET|AIza/);
  });
});
