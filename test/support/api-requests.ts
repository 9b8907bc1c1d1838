import { expect } from 'vitest';
import { errorEnvelopeSchema } from '@perfwatch/common';
import type { openApiResponseChecker } from './openapi-responses.ts';

/**
 * The HTTP interface as a client written from the spec calls it: every request in GET (query)
 * and POST (JSON body) form, every reply checked against /v1/openapi.json. Shared by the
 * conformance suite and the suite that runs the shipped containers.
 */
export type Params = Record<string, string | string[] | undefined>;
export type Reply = { status: number; headers: Headers; body: unknown };
type Checker = Awaited<ReturnType<typeof openApiResponseChecker>>;
/** PUT and PATCH send a JSON body as POST does; DELETE a query string as GET does (/v1/projects/repository, /v1/projects). */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

function queryString(params: Params): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    for (const v of value === undefined ? [] : [value].flat()) search.append(key, v);
  return search.toString();
}

export async function send(
  base: string,
  path: string,
  method: Method,
  params: { query?: Params; body?: unknown; raw?: string; contentType?: string },
  headers: Record<string, string>,
): Promise<Reply> {
  const url = `${base}/v1/${path}${params.query ? `?${queryString(params.query)}` : ''}`;
  const init: RequestInit = { method, headers: { ...headers } };
  if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
    init.body = params.raw ?? JSON.stringify(params.body ?? {});
    (init.headers as Record<string, string>)['Content-Type'] = params.contentType ?? 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Left as text: the assertions of the caller say why that is wrong.
  }
  return { status: res.status, headers: res.headers, body };
}

/** Checks a reply against the OpenAPI document and, for errors, the envelope. */
export function documented(
  checker: Checker,
  path: string,
  method: Method,
  reply: Reply,
  /** The documented path, where `path` names one resource of it (/v1/sites/{id}/overview). */
  template = path.startsWith('updates/') ? '/v1/updates/{id}' : `/v1/${path}`,
): Reply {
  checker.check(template, method.toLowerCase() as Lowercase<Method>, reply.status, reply.body);
  if (reply.status >= 400) {
    const envelope = errorEnvelopeSchema.parse(reply.body);
    expect(JSON.stringify(envelope)).not.toMatch(/\bat .+\.ts:\d+/);
  }
  return reply;
}

/** The same request as GET and POST, both documented; both must answer alike. */
export async function getAndPost(
  checker: Checker,
  base: string,
  path: string,
  get: Params,
  post: unknown,
  { token, headers = {}, same = true }: { token: string | null; headers?: Record<string, string>; same?: boolean },
): Promise<[Reply, Reply]> {
  const h = { ...(token === null ? {} : { Authorization: token }), ...headers };
  const viaGet = documented(checker, path, 'GET', await send(base, path, 'GET', { query: get }, h));
  const viaPost = documented(checker, path, 'POST', await send(base, path, 'POST', { body: post }, h));
  expect(viaPost.status, JSON.stringify(viaPost.body)).toBe(viaGet.status);
  if (same) expect(viaPost.body).toEqual(viaGet.body);
  return [viaGet, viaPost];
}

export const errorsOf = (reply: Reply) => errorEnvelopeSchema.parse(reply.body).errors.join('\n');

type ResourceParams = { query?: Params; body?: unknown; raw?: string; contentType?: string };

/**
 * The requests a conformance suite makes of one resource (`/v1/projects`, `/v1/sites`): as the
 * suite's own user unless told, at its gateway unless told, each answer documented. Getters,
 * since a suite learns its gateway, token and checker in its `beforeAll`.
 */
export function resourceRequests(resource: {
  path: string;
  /** The query parameter DELETE names the resource by. */
  key: string;
  checker: () => Checker;
  base: () => string;
  token: () => string;
}) {
  const call = async (
    method: Method,
    params: ResourceParams,
    headers: Record<string, string> = { Authorization: resource.token() },
    { base = resource.base(), path = resource.path }: { base?: string; path?: string } = {},
  ): Promise<Reply> => documented(resource.checker(), path, method, await send(base, path, method, params, headers));
  const as = (token: string | undefined) => ({ Authorization: token ?? resource.token() });
  return {
    call,
    create: (body: unknown, token?: string) => call('POST', { body }, as(token)),
    patch: (body: unknown, token?: string) => call('PATCH', { body }, as(token)),
    remove: (key: string, token?: string) => call('DELETE', { query: { [resource.key]: key } }, as(token)),
    list: (token?: string) => call('GET', {}, as(token)),
  };
}

/** Who asks and where: a check's request made as a given user at a given gateway. */
export type Asking = { base: string; headers: Record<string, string> };
/** A gateway a check starts for itself, as far as the check uses it. */
type OwnGateway = {
  url: string;
  admin: { createUser(name: string): Promise<{ token: string }> };
  stop(): Promise<void>;
};
/** The rate limits of a gateway whose second request of a minute is already too many. */
export const ONE_A_MINUTE = { updates: 1, reads: 1 };

/**
 * Past the per-minute limit a request is a 429 with a Retry-After: on a gateway of its own
 * (limited to ONE_A_MINUTE, stopped after), a new user's `first` request answers its `status`
 * and each of `over` after it is refused.
 */
export async function expectRateLimited(
  start: () => Promise<OwnGateway>,
  user: string,
  first: { request: (as: Asking) => Promise<Reply>; status: number },
  over: ((as: Asking) => Promise<Reply>)[],
): Promise<void> {
  const limited = await start();
  try {
    const { token } = await limited.admin.createUser(user);
    const as = { base: limited.url, headers: { Authorization: token } };
    expect((await first.request(as)).status).toBe(first.status);
    for (const request of over) {
      const reply = await request(as);
      expect(reply.status).toBe(429);
      expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  } finally {
    await limited.stop();
  }
}

/**
 * While the suite's store is broken (`breaks(true)`, mended after), each request is a 500 that
 * asks to try again and passes on nothing of the database's failure (see breakable-store.ts).
 */
export async function expectTryAgain(breaks: (broken: boolean) => void, requests: (() => Promise<Reply>)[]) {
  breaks(true);
  try {
    for (const request of requests) {
      const reply = await request();
      expect(reply.status).toBe(500);
      expect(errorEnvelopeSchema.parse(reply.body).message).toMatch(/try again/i);
      expect(JSON.stringify(reply.body)).not.toMatch(/connection reset|db\.ts/);
    }
  } finally {
    breaks(false);
  }
}

/** A new token of the caller's organisation (`{ scope: 'ci', projects }`, `{ scope: 'read' }`). */
export async function newToken(base: string, caller: string, body: Record<string, unknown>): Promise<string> {
  const reply = await send(base, 'tokens', 'POST', { body }, { Authorization: caller });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return (reply.body as { token: string }).token;
}
