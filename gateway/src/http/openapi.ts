import { z } from 'zod';
import { createDocument } from 'zod-openapi';
import { errorEnvelopeSchema } from '@perfwatch/common';
import { GATEWAY_ENDPOINTS, type GatewayEndpoint } from './endpoints.ts';
import type { ResponseDoc } from './endpoint-doc.ts';

const json = (schema: z.ZodType, description: string) => ({ description, content: { 'application/json': { schema } } });
const error = (description: string) => json(errorEnvelopeSchema, description);
/** An error whose client should wait before trying again. */
function retryAfter(description: string) {
  return {
    ...error(description),
    headers: z.object({ 'Retry-After': z.string().meta({ description: 'Seconds to wait.' }) }),
  };
}

const readErrors = {
  '400': error(
    'A parameter is missing or invalid, or the Authorization header is missing. `errors` names each problem.',
  ),
  '401': error('The API token is not valid, has expired, or its user is no longer a member of its organisation.'),
  '403': error(
    "The caller's role, or its token's scope, does not allow this request (a viewer's write, a ci token outside its updates and annotations). `errors` names the role needed.",
  ),
  '406': error('The Accept header excludes JSON.'),
  '429': retryAfter(
    'Too many requests from this user (per minute, sync updates in flight, or runs queued), too many failed authentications from this address, or a location has as many updates waiting as the service takes; see Retry-After.',
  ),
  '500': error('Unexpected failure; try again.'),
};
const bodyErrors = {
  '413': error('The body is larger than the limit.'),
  '415': error('The body is not JSON.'),
};
const projectErrors = {
  '404': error('No project of the caller has that URL (or, for /v1/audit and /v1/compare, no snapshot at that date).'),
};

/** The 200 answer: JSON, and any other media types and headers the endpoint documents (/v1/artifacts). */
function answerOf(answer: z.ZodType, doc: GatewayEndpoint['doc']) {
  const { content, description } = json(answer, doc.answer);
  const others = Object.entries(doc.answerTypes ?? {}).map(([type, schema]) => [type, { schema }]);
  const headers = Object.entries(doc.answerHeaders ?? {}).map(([name, about]) => [
    name,
    z.string().optional().meta({ description: about }),
  ]);
  return {
    description,
    content: { ...content, ...Object.fromEntries(others) },
    ...(headers.length > 0 ? { headers: z.object(Object.fromEntries(headers)) } : {}),
  };
}

/** The documented responses of a table entry, by status. */
function responsesOf(docs: Record<string, ResponseDoc> = {}) {
  return Object.fromEntries(
    Object.entries(docs).map(([status, doc]) => [
      status,
      typeof doc === 'string' ? error(doc) : retryAfter(doc.description),
    ]),
  );
}

/**
 * The GET (query) and POST (body) forms of one endpoint. Any other method gets 405 with
 * `Allow: GET, POST` (not listed per operation: OpenAPI describes the methods that exist).
 */
function operations({ contract, doc }: GatewayEndpoint) {
  const base = {
    summary: doc.summary,
    security: [{ token: [] }],
    responses: {
      ...readErrors,
      ...(doc.project === false ? {} : projectErrors),
      '200': answerOf(contract.answer, doc),
      ...responsesOf(doc.responses),
    },
  };
  const path = contract.params ? { path: contract.params } : {};
  // An endpoint that changes something does it by POST alone: its GET reads.
  const get = {
    ...base,
    responses: contract.writes
      ? {
          ...base.responses,
          '405': error('A parameter that changes something came in a GET: send it by POST (`Allow: POST`).'),
        }
      : base.responses,
    requestParams: { query: inputOf(contract.query), ...path },
  };
  const post = {
    ...base,
    responses: { ...base.responses, ...bodyErrors, ...responsesOf(doc.postResponses) },
    requestBody: { required: doc.bodyRequired ?? true, content: { 'application/json': { schema: contract.body } } },
    ...(contract.params ? { requestParams: path } : {}),
  };
  // PUT and PATCH take their request as POST does, DELETE as GET does (a resource's methods,
  // /v1/projects/repository, /v1/projects), PATCH and DELETE by schemas of their own when they have them.
  const patch = {
    ...post,
    responses: { ...base.responses, ...bodyErrors, ...responsesOf(doc.patchResponses) },
    requestBody: { required: true, content: { 'application/json': { schema: contract.patchBody ?? contract.body } } },
  };
  const remove = {
    ...get,
    responses: { ...get.responses, ...responsesOf(doc.deleteResponses) },
    requestParams: { query: inputOf(contract.deleteQuery ?? contract.query), ...path },
  };
  return {
    ...(contract.methods.includes('GET') ? { get } : {}),
    ...(contract.methods.includes('POST') ? { post } : {}),
    ...(contract.methods.includes('PUT') ? { put: post } : {}),
    ...(contract.methods.includes('PATCH') ? { patch } : {}),
    ...(contract.methods.includes('DELETE') ? { delete: remove } : {}),
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
    paths: Object.fromEntries(
      Object.values(GATEWAY_ENDPOINTS).map((entry) => [entry.contract.path, operations(entry)]),
    ),
  });
}
