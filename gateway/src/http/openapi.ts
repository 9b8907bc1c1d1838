import { z } from 'zod';
import { createDocument } from 'zod-openapi';
import {
  annotationListSchema,
  credentialsViewSchema,
  asyncAckSchema,
  auditResultSchema,
  compareResultSchema,
  projectBudgetsSchema,
  webhookListSchema,
  errorEnvelopeSchema,
  overviewResponseSchema,
  projectListSchema,
  snapshotListSchema,
  updateStatusSchema,
} from '@perfwatch/common';
import {
  annotationsBodySchema,
  annotationsQuerySchema,
  credentialsBodySchema,
  credentialsQuerySchema,
  budgetsBodySchema,
  budgetsQuerySchema,
  webhooksBodySchema,
  webhooksQuerySchema,
  auditBodySchema,
  auditQuerySchema,
  compareBodySchema,
  compareQuerySchema,
  overviewBodySchema,
  overviewQuerySchema,
  projectsBodySchema,
  projectsQuerySchema,
  updateBodySchema,
  updateQuerySchema,
  updatesBodySchema,
  updatesQuerySchema,
  updateIdParamsSchema,
  updateStatusBodySchema,
  updateStatusQuerySchema,
} from './request-params.ts';

const json = (schema: z.ZodType, description: string) => ({ description, content: { 'application/json': { schema } } });
const error = (description: string) => json(errorEnvelopeSchema, description);

const readErrors = {
  '400': error(
    'A parameter is missing or invalid, or the Authorization header is missing. `errors` names each problem.',
  ),
  '401': error('The API token is not valid.'),
  '406': error('The Accept header excludes JSON.'),
  '429': {
    ...error(
      'Too many requests from this user (per minute, sync updates in flight, or runs queued), too many failed authentications from this address, or a location has as many updates waiting as the service takes; see Retry-After.',
    ),
    headers: z.object({ 'Retry-After': z.string().meta({ description: 'Seconds to wait.' }) }),
  },
  '500': error('Unexpected failure; try again.'),
};
const bodyErrors = {
  '413': error('The body is larger than the limit.'),
  '415': error('The body is not JSON.'),
};
const projectErrors = {
  '404': error('No project of the caller has that URL (or, for /v1/audit and /v1/compare, no snapshot at that date).'),
};

/**
 * The GET (query) and POST (body) forms of one endpoint. Any other method gets 405 with
 * `Allow: GET, POST` (not listed per operation: OpenAPI describes the methods that exist).
 */
function endpoint(
  summary: string,
  query: z.ZodType,
  body: z.ZodType,
  responses: Record<string, unknown>,
  {
    project = true,
    bodyRequired = true,
    changesByPost = false,
    postOnly = {},
  }: {
    project?: boolean;
    bodyRequired?: boolean;
    /** What changes something is POST only: the GET form answers 405 to a change. */
    changesByPost?: boolean;
    /** Responses only a change can have, so only POST. */
    postOnly?: Record<string, unknown>;
  } = {},
) {
  const base = {
    summary,
    security: [{ token: [] }],
    responses: { ...readErrors, ...(project ? projectErrors : {}), ...responses },
  };
  // An endpoint that changes something does it by POST alone: its GET reads.
  const getResponses = changesByPost
    ? {
        ...base.responses,
        '405': error('A parameter that changes something came in a GET: send it by POST (`Allow: POST`).'),
      }
    : base.responses;
  return {
    get: { ...base, responses: getResponses, requestParams: { query: inputOf(query) } },
    post: {
      ...base,
      responses: { ...base.responses, ...bodyErrors, ...postOnly },
      requestBody: { required: bodyRequired, content: { 'application/json': { schema: body } } },
    },
  };
}

/** An endpoint whose path carries the update id. */
function withPathId(operations: ReturnType<typeof endpoint>) {
  const path = updateIdParamsSchema;
  return {
    get: { ...operations.get, requestParams: { ...operations.get.requestParams, path } },
    post: { ...operations.post, requestParams: { path } },
  };
}

/** `/v1/credentials`: secrets are set by POST alone (never in a URL), so only POST can meet a gateway without a key. */
function credentialsEndpoint() {
  const operations = endpoint(
    'Whether a project has credentials for its login; set (POST only) or clear them',
    credentialsQuerySchema,
    credentialsBodySchema,
    {
      '200': json(
        credentialsViewSchema,
        'Whether the project has credentials, with the cookie and header names and the number of login steps; never a value.',
      ),
    },
    { changesByPost: true },
  );
  return {
    get: operations.get,
    post: {
      ...operations.post,
      responses: {
        ...operations.post.responses,
        '503': error('Credentials were given, and this gateway has no PERFWATCH_SECRETS_KEY to seal them with.'),
      },
    },
  };
}

/** Query parameters must be documented from a plain object schema. */
function inputOf(schema: z.ZodType): z.ZodObject {
  let current: z.ZodType = schema;
  // Unwrap transforms and refinements down to the object the client fills in.
  while (!(current instanceof z.ZodObject)) {
    const def = (current as unknown as { def: { in?: z.ZodType; innerType?: z.ZodType; schema?: z.ZodType } }).def;
    const inner = def.in ?? def.innerType ?? def.schema;
    if (!inner) throw new Error('query schema has no object inside');
    current = inner;
  }
  return current;
}

/** The OpenAPI 3.1 document, generated from the same zod schemas that validate requests and responses. */
export function createOpenApiDocument(serverUrl = '/'): ReturnType<typeof createDocument> {
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'perfwatch',
      version: '1.0.0',
      description:
        'Website performance monitoring: Lighthouse audits from several locations, on mobile and desktop. Every endpoint takes GET (query string) or POST (JSON body) alike.',
    },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: {
        token: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: 'The API token, raw or as `Bearer <token>`.',
        },
      },
    },
    paths: { ...updatePaths(), ...readPaths(), ...settingsPaths() },
  });
}

/** The update endpoints: run one, list a project's snapshots, follow an async update. */
function updatePaths() {
  return {
    '/v1/update': endpoint('Run an update of a project', updateQuerySchema, updateBodySchema, {
      '200': json(
        z.union([auditResultSchema, asyncAckSchema]),
        'sync: the audit result of the devices updated; async: an acknowledgement.',
      ),
      '502': error('Every run failed.'),
      '503': error("No agent serves any of the project's locations."),
      '504': error('Every run timed out.'),
    }),
    '/v1/updates': endpoint(
      'The snapshot dates of a project, per device, a page at a time (the newest first taken)',
      updatesQuerySchema,
      updatesBodySchema,
      {
        '200': json(
          snapshotListSchema,
          'Per device, the snapshot dates of the page with their locations, ascending; `next` when older ones remain.',
        ),
      },
    ),
    '/v1/updates/{id}': withPathId(
      endpoint('Where an async or scheduled update is', updateStatusQuerySchema, updateStatusBodySchema, {
        '200': json(updateStatusSchema, "The update's state; its snapshot date once done, the reason once failed."),
        '404': error('No update of the caller has that id.'),
      }),
    ),
  };
}

/** Reads of stored results wait for one of the gateway's places for them (heavy-reads.ts). */
const heavyReadRefused = {
  '503': {
    ...error(
      'Every place this gateway has for reads of stored results (/v1/audit, /v1/compare) stayed taken while the read waited; see Retry-After.',
    ),
    headers: z.object({ 'Retry-After': z.string().meta({ description: 'Seconds to wait.' }) }),
  },
};

/** What the snapshots say: one snapshot, two compared, KPI records over time, the caller's projects. */
function readPaths() {
  return {
    '/v1/audit': endpoint('Read the snapshot of a project at a date', auditQuerySchema, auditBodySchema, {
      '200': json(auditResultSchema, 'The snapshot, filtered by device and location.'),
      ...heavyReadRefused,
    }),
    '/v1/compare': endpoint('Compare two snapshots of a project', compareQuerySchema, compareBodySchema, {
      '200': json(
        compareResultSchema,
        "Per device and location both snapshots have: the median runs' metrics and differences, whether each is beyond run-to-run noise (a Mann-Whitney U test on the reliable runs, 3 a side at least), and the audits and opportunities that changed most.",
      ),
      ...heavyReadRefused,
    }),
    '/v1/overview': endpoint(
      "KPI records of the caller's projects in a date range",
      overviewQuerySchema,
      overviewBodySchema,
      { '200': json(overviewResponseSchema, 'KPI records, ordered by date, url, device, location, section, kpi.') },
      { project: false },
    ),
    '/v1/projects': endpoint(
      "The caller's projects",
      projectsQuerySchema,
      projectsBodySchema,
      { '200': json(projectListSchema, "The caller's projects, ordered by URL.") },
      { project: false, bodyRequired: false },
    ),
  };
}

/** A project's settings: budgets, webhooks, annotations, login credentials. */
function settingsPaths() {
  return {
    '/v1/budgets': endpoint(
      "Read or replace the budgets a project's snapshots are checked against",
      budgetsQuerySchema,
      budgetsBodySchema,
      {
        '200': json(
          projectBudgetsSchema,
          "The project's budgets (after the replacement, when limits were given). Every snapshot stored afterwards carries `checks` per device and location.",
        ),
      },
      { changesByPost: true },
    ),
    '/v1/webhooks': endpoint(
      "List, add or remove the caller's webhooks",
      webhooksQuerySchema,
      webhooksBodySchema,
      {
        '200': json(
          webhookListSchema,
          "The caller's webhooks with their newest deliveries; `created` (with its signing secret, shown this once) after an add, `removed` after a removal.",
        ),
      },
      {
        project: false,
        bodyRequired: false,
        changesByPost: true,
        postOnly: {
          '404': error(
            'No project of the caller has that URL (`project`), or no webhook of the caller has that id (`remove`).',
          ),
        },
      },
    ),
    '/v1/annotations': endpoint(
      "List a project's annotations (deploy markers), or add one",
      annotationsQuerySchema,
      annotationsBodySchema,
      { '200': json(annotationListSchema, "The project's annotations by date; `added` after an add.") },
      { changesByPost: true },
    ),
    '/v1/credentials': credentialsEndpoint(),
  };
}
