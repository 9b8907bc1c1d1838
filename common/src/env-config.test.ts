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
});
