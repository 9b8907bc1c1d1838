import { z } from 'zod';

/**
 * The names every plain object answers to without owning them: `constructor`, `toString`,
 * `hasOwnProperty`, `valueOf`, `__proto__` and the rest of Object.prototype. A key of a
 * caller's map checked with `key in KNOWN` finds them all "known"; assigned, `__proto__`
 * replaces the object's prototype; and zod's records silently drop it. So no map a caller or
 * an agent keys may use one: it is refused where it comes in, by the schema that reads it back.
 */
export const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A record schema whose input may not carry a prototype name as a key (`what` names the map in
 * the error: "budgets", "header name"). The check reads the input's own keys before the record
 * parses, because a parsed record has already dropped `__proto__`.
 */
export function withoutPrototypeKeys<T extends z.ZodType>(record: T, what: string) {
  return z.preprocess((input, ctx) => {
    if (isPlainObject(input))
      for (const key of Object.keys(input))
        if (PROTOTYPE_NAMES.has(key))
          ctx.addIssue({ code: 'custom', message: `${what}: "${key}" is not allowed as a key`, input });
    return input;
  }, record);
}
