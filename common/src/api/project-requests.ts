import { z } from 'zod';
import { budgetKeyList, limitsSchema, type Budgets } from '../budgets.ts';
import { pageAuthSchema, type PageAuth } from '../page-auth.ts';
import { projectUrl } from './request-fields.ts';

// ---- /v1/projects -----------------------------------------------------------------------

/** No parameters: the caller's projects. */
export const projectsQuerySchema = z.strictObject({});
/** @alias A POST body takes the same parameters as the query string. */
export const projectsBodySchema = projectsQuerySchema;

// ---- /v1/budgets ------------------------------------------------------------------------

export interface BudgetsParams {
  url: string;
  /** Present: the project's budgets are replaced by these. */
  set?: Budgets;
}

const replaced = ({
  url,
  budgets,
  maxRegression,
}: {
  url: string;
  budgets?: Budgets['budgets'] | undefined;
  maxRegression?: Budgets['maxRegression'] | undefined;
}): BudgetsParams =>
  budgets === undefined && maxRegression === undefined
    ? { url }
    : { url, set: { budgets: budgets ?? {}, maxRegression: maxRegression ?? {} } };

/** GET reads a project's budgets; they change by POST only. */
export const budgetsQuerySchema = z.strictObject({ url: projectUrl }).transform(({ url }): BudgetsParams => ({ url }));
/** Parameters that change budgets: refused in a GET (parseRequest's `writes`). */
export const BUDGETS_WRITES = ['budget', 'budgets', 'maxRegression'] as const;
export const budgetsBodySchema = z
  .strictObject({
    url: projectUrl,
    budgets: limitsSchema('budgets')
      .optional()
      .meta({
        description: `Limits by key (${budgetKeyList}): score floors 0–100, metric ceilings in ms, bytes, or unitless for cls. Given (or maxRegression given): the project's budgets are replaced.`,
      }),
    maxRegression: limitsSchema('maxRegression').optional().meta({
      description: 'Allowed regressions against the previous snapshot, by key: score points, or percent for metrics.',
    }),
  })
  .transform(replaced);

// ---- /v1/credentials ---------------------------------------------------------------------

export type CredentialsParams = { url: string; set?: PageAuth; clear: boolean };

/** GET reads; credentials change by POST only (and secrets never travel in a URL, where access logs and proxies keep them). */
export const credentialsQuerySchema = z
  .strictObject({ url: projectUrl })
  .transform(({ url }): CredentialsParams => ({ url, clear: false }));
export const CREDENTIALS_WRITES = ['auth', 'clear'] as const;
export const credentialsBodySchema = z
  .strictObject({
    url: projectUrl,
    auth: pageAuthSchema.optional().meta({
      description:
        'Replaces the credentials: cookies [{name, value}], headers {name: value}, login steps [{action: goto|fill|click|waitFor, …}]. POST only.',
    }),
    clear: z
      .boolean({ error: 'clear must be true or false' })
      .optional()
      .meta({ description: "true: forget the project's credentials." }),
  })
  .superRefine((value, ctx) => {
    if (value.auth && value.clear) ctx.addIssue({ code: 'custom', message: 'auth and clear do not go together' });
  })
  .transform(({ url, auth, clear }): CredentialsParams => ({
    url,
    clear: clear ?? false,
    ...(auth ? { set: auth } : {}),
  }));
