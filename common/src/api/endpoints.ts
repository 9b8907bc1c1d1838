import { z } from 'zod';
import { annotationListSchema } from '../annotations.ts';
import { auditResultSchema } from '../audit-result.ts';
import { projectBudgetsSchema } from '../budgets.ts';
import { compareResultSchema } from '../compare-result.ts';
import {
  asyncAckSchema,
  overviewResponseSchema,
  projectListSchema,
  snapshotListSchema,
  updateStatusSchema,
} from '../overview.ts';
import { credentialsViewSchema } from '../page-auth.ts';
import { flowBodySchema, flowQuerySchema, flowRemovedSchema, flowViewSchema } from './flow-requests.ts';
import { webhookListSchema } from '../webhooks.ts';
import { ANNOTATIONS_WRITES, annotationsBodySchema, annotationsQuerySchema } from './annotation-requests.ts';
import { auditLogBodySchema, auditLogQuerySchema } from './audit-log-requests.ts';
import { artifactJsonAnswerSchema, artifactsBodySchema, artifactsQuerySchema } from './artifact-requests.ts';
import { auditLogPageSchema } from '../audit-log.ts';
import {
  BUDGETS_WRITES,
  budgetsBodySchema,
  budgetsQuerySchema,
  CREDENTIALS_WRITES,
  credentialsBodySchema,
  credentialsQuerySchema,
  projectChangedSchema,
  projectDeleteSchema,
  projectPatchSchema,
  projectRemovedSchema,
  projectsBodySchema,
  projectsQuerySchema,
} from './project-requests.ts';
import {
  auditBodySchema,
  auditQuerySchema,
  compareBodySchema,
  compareQuerySchema,
  overviewBodySchema,
  overviewQuerySchema,
  updatesBodySchema,
  updatesQuerySchema,
} from './snapshot-requests.ts';
import {
  updateBodySchema,
  updateIdParamsSchema,
  updateQuerySchema,
  updateStatusBodySchema,
  updateStatusQuerySchema,
} from './update-requests.ts';
import { WEBHOOKS_WRITES, webhooksBodySchema, webhooksQuerySchema } from './webhook-requests.ts';
import {
  siteChangedSchema,
  siteDeleteSchema,
  siteListSchema,
  sitePatchSchema,
  siteRemovedSchema,
  sitesBodySchema,
  sitesQuerySchema,
} from './site-requests.ts';
import {
  siteOverviewBodySchema,
  siteOverviewParamsSchema,
  siteOverviewQuerySchema,
  siteOverviewSchema,
} from './site-overview.ts';
import {
  siteUpdateAnswerSchema,
  siteUpdateBodySchema,
  siteUpdateParamsSchema,
  siteUpdateQuerySchema,
  siteUpdateStatusSchema,
} from './site-update-requests.ts';
import {
  repositoryBodySchema,
  repositoryLinkViewSchema,
  repositoryQuerySchema,
  repositoryUnlinkedSchema,
} from './forge-requests.ts';
import {
  memberChangedSchema,
  memberDeleteSchema,
  memberListSchema,
  memberRemovedSchema,
  membersBodySchema,
  membersQuerySchema,
} from './member-requests.ts';
import {
  TOKENS_WRITES,
  tokenCreatedSchema,
  tokenDeleteSchema,
  tokenListSchema,
  tokenRevokedSchema,
  tokensBodySchema,
  tokensQuerySchema,
} from './token-requests.ts';

/**
 * One endpoint of the API: where it is, how it is asked (a query string by GET, a JSON body by
 * POST, both giving the same typed request), and what it answers. The gateway mounts its routes
 * and builds its OpenAPI document from these; the client takes its request and answer types from
 * them.
 */
export interface ApiEndpoint {
  /** The OpenAPI path, `{name}` for a path parameter. */
  path: `/v1/${string}`;
  /** PUT and PATCH take a JSON body like POST; DELETE a query string like GET. */
  methods: readonly ('GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE')[];
  query: z.ZodType;
  body: z.ZodType;
  /** PATCH's body, when it is not POST's (PUT's is always POST's). */
  patchBody?: z.ZodType;
  /** DELETE's query string, when it is not GET's. */
  deleteQuery?: z.ZodType;
  /** The path's parameters, when it has any. */
  params?: z.ZodObject;
  /** Parameters that change something: POST only, a GET naming one is refused (405). */
  writes?: readonly string[];
  /** The 200 answer. */
  answer: z.ZodType;
}

const GET_AND_POST = ['GET', 'POST'] as const;

/** Every endpoint of the API, in the order the OpenAPI document lists them. */
export const API_ENDPOINTS = {
  update: {
    path: '/v1/update',
    methods: GET_AND_POST,
    query: updateQuerySchema,
    body: updateBodySchema,
    // sync: the audit result; async: an acknowledgement.
    answer: z.union([auditResultSchema, asyncAckSchema]),
  },
  updates: {
    path: '/v1/updates',
    methods: GET_AND_POST,
    query: updatesQuerySchema,
    body: updatesBodySchema,
    answer: snapshotListSchema,
  },
  updateStatus: {
    path: '/v1/updates/{id}',
    methods: GET_AND_POST,
    query: updateStatusQuerySchema,
    body: updateStatusBodySchema,
    params: updateIdParamsSchema,
    // A site update's id answers its pages' progress (issue 34).
    answer: z.union([updateStatusSchema, siteUpdateStatusSchema]),
  },
  audit: {
    path: '/v1/audit',
    methods: GET_AND_POST,
    query: auditQuerySchema,
    body: auditBodySchema,
    answer: auditResultSchema,
  },
  compare: {
    path: '/v1/compare',
    methods: GET_AND_POST,
    query: compareQuerySchema,
    body: compareBodySchema,
    answer: compareResultSchema,
  },
  artifacts: {
    path: '/v1/artifacts',
    methods: GET_AND_POST,
    query: artifactsQuerySchema,
    body: artifactsBodySchema,
    // The JSON kinds' answer; requests is NDJSON (issue 35).
    answer: artifactJsonAnswerSchema,
  },
  overview: {
    path: '/v1/overview',
    methods: GET_AND_POST,
    query: overviewQuerySchema,
    body: overviewBodySchema,
    answer: overviewResponseSchema,
  },
  projects: {
    path: '/v1/projects',
    // Listed (GET, an empty POST), created (POST with a url), changed (PATCH), removed (DELETE) (issue 33).
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    query: projectsQuerySchema,
    body: projectsBodySchema,
    patchBody: projectPatchSchema,
    deleteQuery: projectDeleteSchema,
    answer: z.union([projectListSchema, projectChangedSchema, projectRemovedSchema]),
  },
  budgets: {
    path: '/v1/budgets',
    methods: GET_AND_POST,
    query: budgetsQuerySchema,
    body: budgetsBodySchema,
    writes: BUDGETS_WRITES,
    answer: projectBudgetsSchema,
  },
  webhooks: {
    path: '/v1/webhooks',
    methods: GET_AND_POST,
    query: webhooksQuerySchema,
    body: webhooksBodySchema,
    writes: WEBHOOKS_WRITES,
    answer: webhookListSchema,
  },
  annotations: {
    path: '/v1/annotations',
    methods: GET_AND_POST,
    query: annotationsQuerySchema,
    body: annotationsBodySchema,
    writes: ANNOTATIONS_WRITES,
    answer: annotationListSchema,
  },
  credentials: {
    path: '/v1/credentials',
    methods: GET_AND_POST,
    query: credentialsQuerySchema,
    body: credentialsBodySchema,
    writes: CREDENTIALS_WRITES,
    answer: credentialsViewSchema,
  },
  flow: {
    path: '/v1/projects/flow',
    // A flow is a setting of its project: read, replaced, removed (issue 36).
    methods: ['GET', 'PUT', 'DELETE'],
    query: flowQuerySchema,
    body: flowBodySchema,
    // GET and PUT: the flow; DELETE: that it was removed.
    answer: z.union([flowViewSchema, flowRemovedSchema]),
  },
  repository: {
    path: '/v1/projects/repository',
    // A link is a resource of its project: read, replaced, removed (issue 32).
    methods: ['GET', 'PUT', 'DELETE'],
    query: repositoryQuerySchema,
    body: repositoryBodySchema,
    // GET and PUT: the link; DELETE: that it was removed.
    answer: z.union([repositoryLinkViewSchema, repositoryUnlinkedSchema]),
  },
  tokens: {
    path: '/v1/tokens',
    // Listed (GET), made (POST, the secret in the answer once), revoked (DELETE) (issue 33).
    methods: ['GET', 'POST', 'DELETE'],
    query: tokensQuerySchema,
    body: tokensBodySchema,
    deleteQuery: tokenDeleteSchema,
    writes: TOKENS_WRITES,
    answer: z.union([tokenListSchema, tokenCreatedSchema, tokenRevokedSchema]),
  },
  members: {
    path: '/v1/members',
    // Listed (GET), added or given a role (PUT), removed (DELETE) (issue 33).
    methods: ['GET', 'PUT', 'DELETE'],
    query: membersQuerySchema,
    body: membersBodySchema,
    deleteQuery: memberDeleteSchema,
    answer: z.union([memberListSchema, memberChangedSchema, memberRemovedSchema]),
  },
  auditLog: {
    path: '/v1/audit-log',
    // Read by GET or POST alike; entries are written by the changes themselves (issue 33).
    methods: GET_AND_POST,
    query: auditLogQuerySchema,
    body: auditLogBodySchema,
    answer: auditLogPageSchema,
  },
  sites: {
    path: '/v1/sites',
    // Listed (GET), created (POST), changed (PATCH), removed with their pages (DELETE) (issue 34).
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    query: sitesQuerySchema,
    body: sitesBodySchema,
    patchBody: sitePatchSchema,
    deleteQuery: siteDeleteSchema,
    answer: z.union([siteListSchema, siteChangedSchema, siteRemovedSchema]),
  },
  siteOverview: {
    path: '/v1/sites/{id}/overview',
    methods: GET_AND_POST,
    query: siteOverviewQuerySchema,
    body: siteOverviewBodySchema,
    params: siteOverviewParamsSchema,
    answer: siteOverviewSchema,
  },
  siteUpdate: {
    path: '/v1/sites/{id}/update',
    // Like /v1/update, a GET queues too: the request names what to measure, nothing else.
    methods: GET_AND_POST,
    query: siteUpdateQuerySchema,
    body: siteUpdateBodySchema,
    params: siteUpdateParamsSchema,
    answer: siteUpdateAnswerSchema,
  },
} as const satisfies Record<string, ApiEndpoint>;

export type ApiEndpointName = keyof typeof API_ENDPOINTS;

/** What a client sends an endpoint in a POST body. */
export type ApiRequest<N extends ApiEndpointName> = z.input<(typeof API_ENDPOINTS)[N]['body']>;
/** What an endpoint answers with 200. */
export type ApiAnswer<N extends ApiEndpointName> = z.output<(typeof API_ENDPOINTS)[N]['answer']>;
