import { z } from 'zod';
import { withoutPrototypeKeys } from './own-keys.ts';

/**
 * How an agent gets past a page's login (v1.3 of the job, optional): cookies and request
 * headers for the project's own origin, and a login script of simple steps run in the same
 * browser before the run. Secrets: kept encrypted by the gateway, in a job only while it
 * travels, never logged by either side.
 */
const selector = z.string().min(1).max(500);
/** An http(s) origin: scheme, host and port, no path (a trailing slash is allowed). */
const origin = z
  .url({ protocol: /^https?$/ })
  .regex(/^https?:\/\/[^/?#@\s]+\/?$/, 'an origin is scheme://host[:port], without a path, query or fragment')
  .refine(
    (text) => URL.canParse(text) && new URL(text).origin === text.replace(/\/$/, ''),
    'an origin is scheme://host[:port], without a path, query or fragment',
  )
  .meta({ description: 'The origin (scheme://host[:port]) of the page this step may type into.' });
const loginStepSchema = z.discriminatedUnion('action', [
  z.strictObject({ action: z.literal('goto'), url: z.url({ protocol: /^https?$/ }) }),
  z.strictObject({
    action: z.literal('fill'),
    selector,
    value: z.string().max(2_000),
    /**
     * The origin of the page the value may be typed into (a sign-in on another origin, reached
     * by a redirect or a click); absent: the last goto's, else the project's. An agent types
     * nothing into a page of any other origin (added with agents that check it).
     */
    origin: origin.optional(),
  }),
  z.strictObject({ action: z.literal('click'), selector }),
  z.strictObject({ action: z.literal('waitFor'), selector }),
]);
export type LoginStep = z.infer<typeof loginStepSchema>;

/** Headers the browser owns: a login may not set them (cookies go in `cookies`). */
const BROWSER_HEADERS = new Set(['host', 'content-length', 'connection', 'cookie', 'transfer-encoding']);
const headersSchema = withoutPrototypeKeys(
  z
    .record(
      z.string(),
      z
        .string()
        .max(8_192)
        .regex(/^[^\r\n]*$/, 'a header value has no line break'),
    )
    .superRefine((headers, ctx) => {
      for (const name of Object.keys(headers)) {
        if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/.test(name))
          ctx.addIssue({ code: 'custom', message: `header name ${JSON.stringify(name.slice(0, 100))} is not a token` });
        else if (BROWSER_HEADERS.has(name.toLowerCase()))
          ctx.addIssue({ code: 'custom', message: `${name} is the browser's to set (cookies go in cookies)` });
      }
    }),
  'headers',
);

export const pageAuthSchema = z
  .strictObject({
    cookies: z
      .array(
        z.strictObject({
          name: z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,200}$/, 'a cookie name is a token'),
          value: z
            .string()
            .max(4_096)
            .regex(/^[^;\r\n]*$/, 'a cookie value has no ; or line break'),
        }),
      )
      .max(20)
      .optional(),
    headers: headersSchema.optional(),
    login: z.array(loginStepSchema).min(1).max(20).optional(),
  })
  .refine(
    (auth) =>
      Boolean(auth.cookies?.length || (auth.headers && Object.keys(auth.headers).length > 0) || auth.login?.length),
    'give cookies, headers or login steps',
  );
export type PageAuth = z.infer<typeof pageAuthSchema>;

/** What `/v1/credentials` answers: whether a project has credentials, and their names only — never a value. */
export const credentialsViewSchema = z
  .object({
    url: z.string(),
    configured: z.boolean(),
    cookies: z.array(z.string()),
    headers: z.array(z.string()),
    loginSteps: z.number().int().nonnegative(),
  })
  .meta({ id: 'Credentials' });
export type CredentialsView = z.infer<typeof credentialsViewSchema>;
