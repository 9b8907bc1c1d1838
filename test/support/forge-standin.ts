/**
 * A local GitHub or GitLab that answers only what its published OpenAPI document allows
 * (test/fixtures/forges/<forge>-openapi.json, trimmed by scripts/trim-forge-openapi.ts): each request
 * is matched to an operation (method + path template; GitHub at the root, GitLab under /api/v4),
 * its token, path and query parameters and JSON body are checked with ajv against the document, and
 * a request that fails any check is refused with 400 and its reasons (the stand-in's refusal, not a
 * forge answer) and recorded as invalid. Answers are validated against the document before they
 * leave; one that does not conform is a 500 and makes close() reject.
 *
 * The answers the documents define for each operation (DOCUMENTED_ANSWERS), which forge clients
 * must handle:
 *
 *   forge   operation                                              ok    errors the document defines
 *   github  repos/create-commit-status                             201   none
 *   github  issues/list-comments                                   200   404, 410
 *   github  issues/create-comment                                  201   403, 404, 410, 422
 *   github  issues/update-comment                                  200   422
 *   github  repos/list-pull-requests-associated-with-commit        200   409
 *   gitlab  postApiV4ProjectsIdStatusesSha                         200   400, 401, 403, 404, 409
 *   gitlab  getApiV4ProjectsIdMergeRequestsNoteableIdNotes         200   400, 404
 *   gitlab  postApiV4ProjectsIdMergeRequestsNoteableIdNotes        201   400, 404
 *   gitlab  putApiV4ProjectsIdMergeRequestsNoteableIdNotesNoteId   200   400, 404
 *   gitlab  getApiV4ProjectsIdRepositoryCommitsShaMergeRequests    200   400, 404
 *
 * GitHub's errors all carry a body schema (basic-error; 422: validation-error); GitLab's carry none.
 * Neither document defines a rate-limit answer for these operations (no 429 at all; GitHub's 403
 * only on create-comment), yet both forges limit every call, so failNext(op, 'rate-limit') answers as
 * they do: GitHub 403, x-ratelimit-remaining 0, x-ratelimit-reset and the document's basic-error
 * body; GitLab 429, Retry-After, RateLimit-* and "Retry later" (the default its document gives for
 * rate_limiting_response_text). 'secondary-rate-limit' (GitHub's 429 with retry-after) is refused
 * unless the operation documents a 429. 'validation' is GitHub's 422 where documented, GitLab's 400.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
export type ForgeName = 'github' | 'gitlab';
export type FaultKind = 'rate-limit' | 'secondary-rate-limit' | 'validation' | number;

export const DOCUMENTED_ANSWERS: Record<string, readonly number[]> = {
  'repos/create-commit-status': [201],
  'issues/list-comments': [200, 404, 410],
  'issues/create-comment': [201, 403, 404, 410, 422],
  'issues/update-comment': [200, 422],
  'repos/list-pull-requests-associated-with-commit': [200, 409],
  postApiV4ProjectsIdStatusesSha: [200, 400, 401, 403, 404, 409],
  getApiV4ProjectsIdMergeRequestsNoteableIdNotes: [200, 400, 404],
  postApiV4ProjectsIdMergeRequestsNoteableIdNotes: [201, 400, 404],
  putApiV4ProjectsIdMergeRequestsNoteableIdNotesNoteId: [200, 400, 404],
  getApiV4ProjectsIdRepositoryCommitsShaMergeRequests: [200, 400, 404],
};

export interface ReceivedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  operationId: string | null;
  body: unknown;
  valid: boolean;
  reasons: string[];
  status: number;
  fault?: string;
}
export interface StatusRecord {
  context: string;
  state: string;
  description: string | null;
  targetUrl: string | null;
}
export interface CommentRecord {
  id: number;
  body: string;
  createdAt: string;
  updatedAt: string;
}
/** A pull (merge) request the test seeds; `commits` are the SHAs the forge associates with it. */
export interface SeededPullRequest {
  number: number;
  commits: string[];
  title?: string;
  head?: string;
  base?: string;
  state?: 'open' | 'closed';
}

interface Answer {
  status: number;
  body?: Json;
  text?: string;
  headers?: Record<string, string>;
}
interface Call {
  route: Route;
  params: Record<string, Json>;
  body: JsonObject;
  url: URL;
}
interface Param {
  name: string;
  in: string;
  required: boolean;
  validate: ValidateFunction;
}
interface Route {
  operationId: string;
  method: string;
  pattern: RegExp;
  names: string[];
  params: Param[];
  body?: { required: boolean; validate: ValidateFunction };
  responses: Record<string, JsonObject>;
}
class Refusal extends Error {
  operationId: string | null;
  constructor(message: string, operationId: string | null = null) {
    super(message);
    this.operationId = operationId;
  }
}

const FIXTURES = join(import.meta.dirname, '../fixtures/forges');
const NOW = '2026-01-01T00:00:00Z';

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The document, an ajv holding it, and a route per operation. */
function loadDocument(forge: ForgeName) {
  const document = JSON.parse(readFileSync(join(FIXTURES, `${forge}-openapi.json`), 'utf8')) as JsonObject;
  const ajv = new Ajv({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  ajv.addSchema(document as object, forge);
  const deref = (value: Json | undefined): JsonObject => {
    let current = value;
    while (isObject(current) && typeof current['$ref'] === 'string')
      current = current['$ref']
        .slice(2)
        .split('/')
        .reduce<Json | undefined>((at, key) => (isObject(at) ? at[key] : undefined), document);
    if (!isObject(current)) throw new Error(`${forge}: unresolvable ${JSON.stringify(value)}`);
    return current;
  };
  // Schemas are compiled where they stand, their `#/components/...` refs pointed into the document.
  const compile = (schema: Json): ValidateFunction =>
    ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${forge}#/components/`)));
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(deref(document['paths']))) {
    const shared = isObject(item) && Array.isArray(item['parameters']) ? item['parameters'] : [];
    for (const [method, operation] of Object.entries(isObject(item) ? item : {})) {
      if (method === 'parameters' || !isObject(operation)) continue;
      routes.push(routeOf(template, method, operation, shared, { deref, compile }));
    }
  }
  return { document, ajv, deref, compile, routes };
}
type Loaded = ReturnType<typeof loadDocument>;

function routeOf(
  template: string,
  method: string,
  operation: JsonObject,
  shared: Json[],
  { deref, compile }: Pick<Loaded, 'deref' | 'compile'>,
): Route {
  const params = [...shared, ...(Array.isArray(operation['parameters']) ? operation['parameters'] : [])]
    .map((param) => deref(param))
    .map((param) => ({
      name: String(param['name']),
      in: String(param['in']),
      required: param['required'] === true,
      validate: compile(param['schema'] ?? {}),
      multiSegment: param['x-multi-segment'] === true,
    }));
  const names: string[] = [];
  const source = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    names.push(name);
    return params.find((param) => param.name === name)?.multiSegment ? '(.+)' : '([^/]+)';
  });
  const requestBody = operation['requestBody'] === undefined ? undefined : deref(operation['requestBody']);
  const bodySchema = isObject(requestBody) ? deref(requestBody['content'])['application/json'] : undefined;
  return {
    operationId: String(operation['operationId']),
    method: method.toUpperCase(),
    pattern: new RegExp(`^${source}$`),
    names,
    params,
    ...(isObject(bodySchema)
      ? { body: { required: requestBody?.['required'] === true, validate: compile(bodySchema['schema'] ?? {}) } }
      : {}),
    responses: Object.fromEntries(Object.entries(deref(operation['responses'])).map(([s, r]) => [s, deref(r)])),
  };
}

/** A parameter's string as the first reading its schema accepts: as it is, a number, a boolean. */
function readParam(param: Param, raw: string): Json {
  const readings: Json[] = [raw];
  if (/^-?\d+(\.\d+)?$/.test(raw)) readings.push(Number(raw));
  if (raw === 'true' || raw === 'false') readings.push(raw === 'true');
  const accepted = readings.find((reading) => param.validate(reading));
  if (accepted === undefined)
    throw new Refusal(`${param.in} parameter ${param.name}=${JSON.stringify(raw)} is invalid`);
  return accepted;
}

function checkToken(forge: ForgeName, token: string, headers: IncomingMessage['headers']): string[] {
  const bearer = /^(?:bearer|token)\s+(.+)$/i.exec(headers.authorization ?? '')?.[1];
  const given =
    forge === 'github'
      ? [bearer]
      : [headers['private-token'], headers['job-token'], /^bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1]];
  if (given.some((value) => value === token)) return [];
  const how = forge === 'github' ? 'Authorization: Bearer|token' : 'PRIVATE-TOKEN, JOB-TOKEN or Authorization: Bearer';
  return [`authentication: no valid token in ${how}`];
}

function checkCall(loaded: Loaded, url: URL, method: string, text: string, reasons: string[]): Call {
  const path = decodeURI(url.pathname);
  const match = loaded.routes
    .filter((route) => route.method === method)
    .map((route) => ({ route, found: route.pattern.exec(path) }))
    .find(({ found }) => found !== null);
  if (!match?.found) throw new Refusal(`no operation of the document matches ${method} ${path}`);
  const { route, found } = match;
  const params: Record<string, Json> = {};
  for (const param of route.params) {
    const index = route.names.indexOf(param.name);
    const raw = param.in === 'path' ? decodeURIComponent(found[index + 1] ?? '') : url.searchParams.get(param.name);
    if (param.in !== 'path' && param.in !== 'query') continue;
    if (raw === null) {
      if (param.required) reasons.push(`${param.in} parameter ${param.name} is required`);
      continue;
    }
    try {
      params[param.name] = readParam(param, raw);
    } catch (error) {
      reasons.push((error as Error).message);
    }
  }
  let body: JsonObject = {};
  if (route.body) {
    let parsed: unknown = undefined;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      reasons.push('the body is not JSON');
    }
    if (parsed === undefined && route.body.required) reasons.push('a JSON body is required');
    else if (parsed !== undefined && !route.body.validate(parsed))
      reasons.push(`body: ${loaded.ajv.errorsText(route.body.validate.errors)}`);
    else if (isObject(parsed)) body = parsed;
  }
  if (reasons.length > 0) throw new Refusal(reasons.join('; '), route.operationId);
  return { route, params, body, url };
}

/** Throws unless the answer is one the operation documents, with a body its schema accepts. */
function checkAnswer(loaded: Loaded, route: Route, answer: Answer, fallbackSchema?: string): void {
  const response = route.responses[String(answer.status)];
  const content = response?.['content'];
  const schema =
    isObject(content) && isObject(content['application/json']) ? content['application/json']['schema'] : undefined;
  if (!response && !fallbackSchema) throw new Error(`${route.operationId} documents no ${answer.status} answer`);
  const against = schema ?? (response ? undefined : { $ref: fallbackSchema ?? '' });
  if (against === undefined) return;
  const validate = loaded.compile(against);
  if (!validate(answer.body))
    throw new Error(
      `${route.operationId} ${answer.status} answer breaks the document: ${loaded.ajv.errorsText(validate.errors)}`,
    );
}

/** The slice of `items` a page asks for, and the pages there are. */
function paginate<T>(items: T[], params: Record<string, Json>, perPageDefault: number) {
  const perPage = Math.min(100, Math.max(1, Number(params['per_page'] ?? perPageDefault)));
  const page = Math.max(1, Number(params['page'] ?? 1));
  const pages = Math.max(1, Math.ceil(items.length / perPage));
  return { slice: items.slice((page - 1) * perPage, page * perPage), page, perPage, pages };
}

function linkHeader(url: URL, page: number, perPage: number, pages: number): string {
  const at = (n: number) => {
    const target = new URL(url);
    target.searchParams.set('per_page', String(perPage));
    target.searchParams.set('page', String(n));
    return `<${target.href}>`;
  };
  const links = [];
  if (page > 1) links.push(`${at(page - 1)}; rel="prev"`, `${at(1)}; rel="first"`);
  if (page < pages) links.push(`${at(page + 1)}; rel="next"`, `${at(pages)}; rel="last"`);
  return links.join(', ');
}

/** The least object `schema` accepts (required members only, nulls where allowed). */
function sample(loaded: Loaded, schema: Json): Json {
  const at = loaded.deref(schema);
  if (at['nullable'] === true) return null;
  const all = at['allOf'] ?? at['oneOf'] ?? at['anyOf'];
  if (Array.isArray(all)) return Object.assign({}, ...all.map((part) => sample(loaded, part)));
  if (Array.isArray(at['enum'])) return at['enum'][0] ?? null;
  if (at['type'] === 'array') return [];
  if (at['type'] === 'integer' || at['type'] === 'number') return 1;
  if (at['type'] === 'boolean') return false;
  if (at['type'] === 'string')
    return at['format'] === 'date-time' ? NOW : at['format'] === 'uri' ? 'https://forge.invalid/' : 'x';
  const properties = isObject(at['properties']) ? at['properties'] : {};
  const required = Array.isArray(at['required']) ? at['required'].map(String) : [];
  return Object.fromEntries(required.map((name) => [name, sample(loaded, properties[name] ?? {})]));
}

interface Forge {
  loaded: Loaded;
  options: Required<StandInOptions>;
  origin: string;
  pulls: SeededPullRequest[];
  statuses: Map<string, StatusRecord[]>;
  comments: Map<number, CommentRecord[]>;
  nextId(): number;
}

function stamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function pullOf(forge: Forge, number: number): SeededPullRequest | undefined {
  return forge.pulls.find((pull) => pull.number === number);
}

function addComment(forge: Forge, pull: number, body: string): CommentRecord {
  const now = stamp();
  const comment = { id: forge.nextId(), body, createdAt: now, updatedAt: now };
  forge.comments.set(pull, [...(forge.comments.get(pull) ?? []), comment]);
  return comment;
}

function addStatus(forge: Forge, sha: string, status: StatusRecord): void {
  forge.statuses.set(sha, [...(forge.statuses.get(sha) ?? []), status]);
}

function text(value: Json | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

/** GitHub's objects: the document's required members, then what this stand-in knows. */
function githubShapes(forge: Forge) {
  const { loaded, origin } = forge;
  const [owner, repo] = forge.options.repository.split('/');
  const base = `${origin}/repos/${owner}/${repo}`;
  const blank = (name: string) => sample(loaded, { $ref: `#/components/schemas/${name}` }) as JsonObject;
  const user = { ...blank('simple-user'), login: 'perfwatch-bot', id: 1, type: 'Bot' };
  const web = `https://github.invalid/${owner}/${repo}`;
  const side = (pr: JsonObject, end: 'head' | 'base', ref: string, sha: string): Json => ({
    ...(isObject(pr[end]) ? pr[end] : {}),
    ...{ ref, sha, label: `${owner}:${ref}`, user },
  });
  return {
    base,
    user,
    status: (id: number, fields: JsonObject): Json => ({
      ...blank('status'),
      ...{ url: `${base}/statuses/${fields['sha']}`, avatar_url: null, id, node_id: `SC_${id}`, creator: user },
      ...{
        state: fields['state'] ?? null,
        context: fields['context'] ?? null,
        created_at: stamp(),
        updated_at: stamp(),
      },
      ...{ description: fields['description'] ?? null, target_url: fields['targetUrl'] ?? null },
    }),
    comment: (c: CommentRecord, pull: number): Json => ({
      ...blank('issue-comment'),
      ...{ id: c.id, node_id: `IC_${c.id}`, body: c.body, user, created_at: c.createdAt, updated_at: c.updatedAt },
      ...{ url: `${base}/issues/comments/${c.id}`, issue_url: `${base}/issues/${pull}`, author_association: 'NONE' },
      html_url: `${web}/pull/${pull}#issuecomment-${c.id}`,
    }),
    pull: (pull: SeededPullRequest): Json => {
      const pr = blank('pull-request-simple');
      return {
        ...pr,
        ...{ url: `${base}/pulls/${pull.number}`, id: pull.number, node_id: `PR_${pull.number}`, number: pull.number },
        ...{ state: pull.state ?? 'open', title: pull.title ?? `Pull request ${pull.number}`, user },
        ...{ html_url: `${web}/pull/${pull.number}`, created_at: NOW, updated_at: NOW },
        head: side(pr, 'head', pull.head ?? `feature-${pull.number}`, pull.commits.at(-1) ?? ''),
        base: side(pr, 'base', pull.base ?? 'main', '0'.repeat(40)),
      };
    },
    known(call: Call): void {
      if (`${call.params['owner']}/${call.params['repo']}` !== forge.options.repository)
        throw new Refusal(`this stand-in holds only the repository ${forge.options.repository}`);
    },
    notFound: { status: 404, body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' } },
    page(call: Call, items: Json[]): Answer {
      const { slice, page, perPage, pages } = paginate(items, call.params, 30);
      const link = linkHeader(call.url, page, perPage, pages);
      return { status: 200, body: slice, headers: link === '' ? {} : { link } };
    },
  };
}

function githubOperations(forge: Forge): Record<string, (call: Call) => Answer> {
  const github = githubShapes(forge);
  const pullOfCall = (call: Call) => {
    github.known(call);
    const number = Number(call.params['issue_number']);
    return { number, pull: pullOf(forge, number) };
  };
  return {
    'repos/create-commit-status': (call) => {
      github.known(call);
      const sha = String(call.params['sha']);
      const status = {
        ...{ state: String(call.body['state']), context: text(call.body['context']) ?? 'default' },
        ...{ description: text(call.body['description']), targetUrl: text(call.body['target_url']) },
      };
      addStatus(forge, sha, status);
      const body = github.status(forge.nextId(), { ...status, sha });
      return { status: 201, body, headers: { location: `${github.base}/statuses/${sha}` } };
    },
    'issues/list-comments': (call) => {
      const { number, pull } = pullOfCall(call);
      if (!pull) return github.notFound;
      const since = text(call.params['since']);
      const comments = (forge.comments.get(number) ?? []).filter((c) => since === null || c.updatedAt >= since);
      return github.page(
        call,
        comments.map((c) => github.comment(c, number)),
      );
    },
    'issues/create-comment': (call) => {
      const { number, pull } = pullOfCall(call);
      if (!pull) return github.notFound;
      const created = addComment(forge, number, String(call.body['body']));
      const location = `${github.base}/issues/comments/${created.id}`;
      return { status: 201, body: github.comment(created, number), headers: { location } };
    },
    'issues/update-comment': (call) => {
      github.known(call);
      const id = Number(call.params['comment_id']);
      const found = [...forge.comments].find(([, list]) => list.some((c) => c.id === id));
      const comment = found?.[1].find((c) => c.id === id);
      // The document defines no 404 here: editing a comment that was never made is the test's error.
      if (!found || !comment) throw new Refusal(`no comment ${id} (issues/update-comment documents no 404)`);
      Object.assign(comment, { body: String(call.body['body']), updatedAt: stamp() });
      return { status: 200, body: github.comment(comment, found[0]) };
    },
    'repos/list-pull-requests-associated-with-commit': (call) => {
      github.known(call);
      const sha = String(call.params['commit_sha']);
      return github.page(
        call,
        forge.pulls.filter((pull) => pull.commits.includes(sha)).map((pull) => github.pull(pull)),
      );
    },
  };
}

/** GitLab's objects. Its entities require nothing and declare no nulls: absent members are left out. */
function gitlabShapes(forge: Forge) {
  const { id: projectId, path } = forge.options.project;
  const author = {
    ...{ id: 1, username: 'perfwatch-bot', name: 'perfwatch', state: 'active', locked: false },
    ...{ avatar_url: 'https://gitlab.invalid/avatar.png', web_url: 'https://gitlab.invalid/perfwatch-bot' },
  };
  return {
    author,
    note: (c: CommentRecord, iid: number): Json => ({
      ...{ id: c.id, body: c.body, author, created_at: c.createdAt, updated_at: c.updatedAt, system: false },
      ...{ noteable_id: 1000 + iid, noteable_type: 'MergeRequest', noteable_iid: iid, project_id: projectId },
      ...{ resolvable: false, confidential: false, internal: false, imported: false, commands_changes: {} },
    }),
    mergeRequest: (pull: SeededPullRequest): JsonObject => ({
      ...{ id: 1000 + pull.number, iid: pull.number, project_id: projectId, labels: [], draft: false },
      ...{ title: pull.title ?? `Merge request ${pull.number}`, created_at: NOW, updated_at: NOW, author },
      ...{ state: pull.state === 'closed' ? 'closed' : 'opened', upvotes: 0, downvotes: 0 },
      ...{ source_branch: pull.head ?? `feature-${pull.number}`, target_branch: pull.base ?? 'main' },
      ...{ source_project_id: projectId, target_project_id: projectId, sha: pull.commits.at(-1) ?? '' },
      ...{ reference: `!${pull.number}`, web_url: `https://gitlab.invalid/${path}/-/merge_requests/${pull.number}` },
      references: { short: `!${pull.number}`, relative: `!${pull.number}`, full: `${path}!${pull.number}` },
      user_notes_count: forge.comments.get(pull.number)?.length ?? 0,
    }),
    known(call: Call): void {
      if (![String(projectId), path].includes(String(call.params['id'])))
        throw new Refusal(`this stand-in holds only the project ${projectId} (${path})`);
    },
    notFound: (what: string): Answer => ({ status: 404, body: { message: `404 ${what} Not Found` } }),
    page(call: Call, items: Json[]): Answer {
      const { slice, page, perPage, pages } = paginate(items, call.params, 20);
      const headers: Record<string, string> = {
        ...{ 'x-page': String(page), 'x-per-page': String(perPage), 'x-total': String(items.length) },
        ...{ 'x-total-pages': String(pages), 'x-next-page': page < pages ? String(page + 1) : '' },
        'x-prev-page': page > 1 ? String(page - 1) : '',
      };
      const link = linkHeader(call.url, page, perPage, pages);
      return { status: 200, body: slice, headers: link === '' ? headers : { ...headers, link } };
    },
  };
}

/** GitLab lists notes newest first unless asked otherwise (`sort`, `order_by`). */
function sortedNotes(notes: CommentRecord[], params: Record<string, Json>): CommentRecord[] {
  const key = params['order_by'] === 'updated_at' ? 'updatedAt' : 'createdAt';
  const direction = params['sort'] === 'asc' ? 1 : -1;
  return [...notes].sort((a, b) => (a[key] === b[key] ? a.id - b.id : a[key] < b[key] ? -1 : 1) * direction);
}

/** GitLab keeps a status per name (`name`, else `context`, else "default"); its answer omits what was not given. */
function gitlabCommitStatus(forge: Forge, author: Json, call: Call): Answer {
  const [sha, state] = [String(call.params['sha']), String(call.body['state'])];
  const name = text(call.body['name']) ?? text(call.body['context']) ?? 'default';
  const [description, targetUrl] = [text(call.body['description']), text(call.body['target_url'])];
  addStatus(forge, sha, { context: name, state, description, targetUrl });
  const given = {
    ref: text(call.body['ref']),
    target_url: targetUrl,
    description,
    coverage: call.body['coverage'] ?? null,
  };
  const body = {
    ...{ id: forge.nextId(), sha, status: state, name, created_at: stamp(), allow_failure: false, author },
    ...Object.fromEntries(Object.entries(given).filter(([, value]) => value !== null)),
  };
  return { status: 200, body };
}

function gitlabOperations(forge: Forge): Record<string, (call: Call) => Answer> {
  const gitlab = gitlabShapes(forge);
  const notesOf = (call: Call) => {
    gitlab.known(call);
    const iid = Number(call.params['noteable_id']);
    return { iid, pull: pullOf(forge, iid), notes: forge.comments.get(iid) ?? [] };
  };
  return {
    postApiV4ProjectsIdStatusesSha: (call) => {
      gitlab.known(call);
      return gitlabCommitStatus(forge, gitlab.author, call);
    },
    getApiV4ProjectsIdMergeRequestsNoteableIdNotes: (call) => {
      const { iid, pull, notes } = notesOf(call);
      if (!pull) return gitlab.notFound('Merge Request');
      return gitlab.page(
        call,
        sortedNotes(notes, call.params).map((c) => gitlab.note(c, iid)),
      );
    },
    postApiV4ProjectsIdMergeRequestsNoteableIdNotes: (call) => {
      const { iid, pull } = notesOf(call);
      if (!pull) return gitlab.notFound('Merge Request');
      const body = text(call.body['body']);
      // The document lets `body` be null; GitLab itself refuses an empty note with its 400.
      if (!body) return { status: 400, body: { message: { note: ["can't be blank"] } } };
      return { status: 201, body: gitlab.note(addComment(forge, iid, body), iid) };
    },
    putApiV4ProjectsIdMergeRequestsNoteableIdNotesNoteId: (call) => {
      const { iid, pull, notes } = notesOf(call);
      const found = notes.find((c) => c.id === Number(call.params['note_id']));
      if (!pull || !found) return gitlab.notFound(pull ? 'Note' : 'Merge Request');
      const body = text(call.body['body']);
      if (body !== null) Object.assign(found, { body, updatedAt: stamp() });
      return { status: 200, body: gitlab.note(found, iid) };
    },
    getApiV4ProjectsIdRepositoryCommitsShaMergeRequests: (call) => {
      gitlab.known(call);
      const [sha, state] = [String(call.params['sha']), text(call.params['state'])];
      const mergeRequests = forge.pulls.filter((pull) => pull.commits.includes(sha)).map(gitlab.mergeRequest);
      return gitlab.page(
        call,
        mergeRequests.filter((mr) => state === null || mr['state'] === state),
      );
    },
  };
}

interface Fault {
  answer: Answer;
  /** A schema to check the body against when the operation documents no such answer; false: none. */
  fallback?: string | false;
}

function documented(route: Route, status: number): void {
  if (!route.responses[String(status)])
    throw new Error(`${route.operationId}: the document defines no ${status} answer`);
}

function githubFault(route: Route, kind: FaultKind): Fault {
  const documentation_url = 'https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api';
  if (kind === 'rate-limit') {
    const reset = String(Math.floor(Date.now() / 1000) + 3600);
    const headers = { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '0', 'x-ratelimit-used': '5000' };
    const body = { message: 'API rate limit exceeded for user ID 1.', documentation_url };
    const answer = {
      status: 403,
      body,
      headers: { ...headers, 'x-ratelimit-reset': reset, 'x-ratelimit-resource': 'core' },
    };
    return { answer, fallback: '#/components/schemas/basic-error' };
  }
  if (kind === 'secondary-rate-limit') {
    documented(route, 429);
    const body = { message: 'You have exceeded a secondary rate limit.', documentation_url };
    return { answer: { status: 429, body, headers: { 'retry-after': '60' } } };
  }
  const status = kind === 'validation' ? 422 : kind;
  documented(route, status);
  if (status !== 422)
    return { answer: { status, body: { message: String(status), documentation_url: 'https://docs.github.com/rest' } } };
  const errors = [
    {
      resource: 'IssueComment',
      field: 'body',
      code: 'custom',
      message: 'body is too long (maximum is 65536 characters)',
    },
  ];
  return {
    answer: {
      status,
      body: { message: 'Validation Failed', documentation_url: 'https://docs.github.com/rest', errors },
    },
  };
}

function gitlabFault(route: Route, kind: FaultKind): Fault {
  if (kind === 'rate-limit') {
    const reset = Math.floor(Date.now() / 1000) + 60;
    const headers = {
      ...{ 'retry-after': '60', 'ratelimit-name': 'throttle_authenticated_api', 'ratelimit-limit': '60' },
      ...{ 'ratelimit-observed': '61', 'ratelimit-remaining': '0', 'ratelimit-reset': String(reset) },
      'ratelimit-resettime': new Date(reset * 1000).toUTCString(),
    };
    return { answer: { status: 429, text: 'Retry later\n', headers }, fallback: false };
  }
  if (kind === 'secondary-rate-limit') throw new Error("secondary-rate-limit is GitHub's; use rate-limit");
  const status = kind === 'validation' ? 400 : kind;
  documented(route, status);
  return { answer: { status, body: status === 400 ? { error: 'body is invalid' } : { message: `${status} Error` } } };
}

export interface StandInOptions {
  forge: ForgeName;
  token: string;
  /** GitHub `owner/repo` the stand-in holds (default octo/app). */
  repository?: string;
  /** GitLab project id and path the stand-in holds (default 42, group/app). */
  project?: { id: number; path: string };
}

export type ForgeStandIn = Awaited<ReturnType<typeof startForgeStandIn>>;

interface Responder {
  forge: Forge;
  operations: Record<string, (call: Call) => Answer>;
  faults: Map<string, Fault[]>;
  broken: Error[];
}

/** The answer to one request: the operation's, an injected fault, a refusal (400) or a broken answer (500). */
function respond(
  at: Responder,
  record: ReceivedRequest,
  url: URL,
  headers: IncomingMessage['headers'],
  text: string,
): Answer {
  const { loaded, options } = at.forge;
  try {
    const call = checkCall(loaded, url, record.method, text, checkToken(options.forge, options.token, headers));
    record.operationId = call.route.operationId;
    if (call.route.body) record.body = call.body;
    const fault = at.faults.get(call.route.operationId)?.shift();
    if (fault) record.fault = String(fault.answer.status);
    const answer = fault?.answer ?? (at.operations[call.route.operationId] ?? unknownOperation)(call);
    if (fault?.fallback !== false) checkAnswer(loaded, call.route, answer, fault?.fallback);
    return answer;
  } catch (error) {
    if (!(error instanceof Refusal)) {
      at.broken.push(error as Error);
      return { status: 500, body: { message: (error as Error).message } };
    }
    record.valid = false;
    record.reasons = error.message.split('; ');
    record.operationId ??= error.operationId;
    return { status: 400, body: { message: 'refused by the forge stand-in', reasons: record.reasons } };
  }
}

async function serve(at: Responder, requests: ReceivedRequest[], req: IncomingMessage, res: ServerResponse) {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  const url = new URL(req.url ?? '/', at.forge.origin);
  const record: ReceivedRequest = {
    ...{ method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams) },
    ...{ operationId: null, body: body === '' ? undefined : body, valid: true, reasons: [], status: 0 },
  };
  const answer = respond(at, record, url, req.headers, body);
  record.status = answer.status;
  requests.push(record);
  const json = answer.text === undefined;
  res.writeHead(answer.status, { 'content-type': json ? 'application/json' : 'text/plain', ...answer.headers });
  res.end(json ? JSON.stringify(answer.body ?? null) : answer.text);
}

export async function startForgeStandIn(given: StandInOptions) {
  const options = { repository: 'octo/app', project: { id: 42, path: 'group/app' }, ...given };
  const loaded = loadDocument(options.forge);
  const requests: ReceivedRequest[] = [];
  let counter = 100;
  // The handler needs the port the server gets: it finds its responder here once listening.
  const wired: { at?: Responder } = {};
  const server = createServer((req, res) => void (wired.at && serve(wired.at, requests, req, res)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const forge: Forge = {
    ...{ loaded, options, origin, pulls: [], statuses: new Map(), comments: new Map() },
    nextId: () => ++counter,
  };
  const operations = options.forge === 'github' ? githubOperations(forge) : gitlabOperations(forge);
  const ready: Responder = { forge, operations, faults: new Map(), broken: [] };
  wired.at = ready;
  return {
    /** The API's base URL: GitHub's root, GitLab's /api/v4. */
    apiUrl: options.forge === 'github' ? origin : `${origin}/api/v4`,
    requests,
    invalidRequests: () => requests.filter((request) => !request.valid),
    statuses: (sha: string): StatusRecord[] => forge.statuses.get(sha) ?? [],
    comments: (pull: number): CommentRecord[] => forge.comments.get(pull) ?? [],
    seedPullRequest: (pull: SeededPullRequest): void => void forge.pulls.push(pull),
    seedComments: (pull: number, bodies: string[]): void => bodies.forEach((body) => addComment(forge, pull, body)),
    /** The next valid request to `operationId` gets this answer instead; throws if its document has none. */
    failNext(operationId: string, kind: FaultKind): void {
      const route = loaded.routes.find((candidate) => candidate.operationId === operationId);
      if (!route) throw new Error(`${operationId} is not an operation of the ${options.forge} document`);
      const fault = options.forge === 'github' ? githubFault(route, kind) : gitlabFault(route, kind);
      ready.faults.set(operationId, [...(ready.faults.get(operationId) ?? []), fault]);
    },
    async close(): Promise<void> {
      server.close();
      server.closeAllConnections();
      await once(server, 'close');
      if (ready.broken.length > 0)
        throw new AggregateError(ready.broken, 'the forge stand-in sent answers its document does not allow');
    },
    async [Symbol.asyncDispose](): Promise<void> {
      await this.close();
    },
  };
}

function unknownOperation(call: Call): Answer {
  throw new Error(`the stand-in has no handler for ${call.route.operationId}`);
}
