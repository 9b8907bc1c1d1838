import type { z } from 'zod';
import {
  API_ENDPOINTS,
  auditResultSchema,
  asyncAckSchema,
  flowViewSchema,
  projectChangedSchema,
  projectListSchema,
  projectRemovedSchema,
  repositoryLinkViewSchema,
  siteChangedSchema,
  siteListSchema,
  siteRemovedSchema,
  type siteUpdateBodySchema,
  memberChangedSchema,
  memberListSchema,
  memberRemovedSchema,
  tokenCreatedSchema,
  tokenListSchema,
  tokenRevokedSchema,
  type ApiAnswer,
  type ApiEndpoint,
  type ApiEndpointName,
  type ApiRequest,
  type AuditResult,
  type Budgets,
  type Flow,
  type FlowView,
  type PageAuth,
  type ProjectSettingsGiven,
  type ProjectView,
  type RepositoryLinkView,
  type SiteBudgetsGiven,
  type SiteSettingsGiven,
  type SiteUpdateAnswer,
  type SiteUpdateStatusView,
  type SiteView,
  type MemberView,
  type Role,
  type TokenCreated,
  type TokenView,
  type UpdateStatusView,
} from '@perfwatch/common';
import { waitForUpdate } from './update-wait.ts';
import { ApiClientError } from './api-client-error.ts';
import { postJson, type Connection } from './api-request.ts';

export { ApiClientError };

/**
 * The operations this client calls, by name and path: every endpoint of the API's table
 * (common/src/api/endpoints.ts), whose request and answer schemas give this client its types. A
 * test holds them against the gateway's `/v1/openapi.json`. Every call is a POST with a JSON
 * body: no URL-encoding surprises, and arrays stay arrays. `/v1/projects/repository` and
 * `/v1/projects/flow`, which have no POST, are read by GET, replaced by PUT (a JSON body) and
 * removed by DELETE; a project is changed by PATCH (a JSON body) and removed by DELETE.
 */
export const CLIENT_OPERATIONS = Object.fromEntries(
  Object.entries(API_ENDPOINTS).map(([name, endpoint]) => [name, endpoint.path]),
) as { [N in ApiEndpointName]: (typeof API_ENDPOINTS)[N]['path'] };

/** A sync or async update; the client chooses the mode by the method called. */
export type UpdateRequest = Omit<ApiRequest<'update'>, 'mode'>;
export type AuditRequest = ApiRequest<'audit'>;
export type CompareRequest = ApiRequest<'compare'>;
/** The overview's request with its date range spread: `startDate`, `endDate` (`yyyy-MM-dd`). */
export type OverviewRequest = Omit<ApiRequest<'overview'>, 'dateRange'> & ApiRequest<'overview'>['dateRange'];
/** Nothing: a listing; `targetUrl`: an add; `remove`: a removal (POST forms of /v1/webhooks). */
export type WebhooksRequest = ApiRequest<'webhooks'>;
/** An annotation to add: `date` is `yyyy-MM-ddTHH:mm:ss`, UTC, absent: now. */
export type AnnotationRequest = Pick<ApiRequest<'annotations'>, 'url' | 'date' | 'link'> & { text: string };
type AnnotationRange = Pick<ApiRequest<'annotations'>, 'from' | 'to'>;

export interface ApiClientOptions {
  /** Base URL of a gateway, e.g. `http://127.0.0.1:8080`. */
  server: string;
  token: string;
  fetch?: typeof fetch;
  /** Deadline of one read request. */
  readTimeoutMs?: number;
  /** Deadline of a sync update, which waits for every Lighthouse run. */
  updateTimeoutMs?: number;
}

export interface WaitOptions {
  pollMs?: number;
  timeoutMs?: number;
  /** Called with every status read while waiting, e.g. to draw progress. */
  onStatus?: (status: UpdateStatusView) => void;
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  return new ApiClient(options);
}

/** The perfwatch HTTP API, one method per operation, every answer read against its schema. */
export class ApiClient {
  readonly #connection: Connection;
  readonly #readTimeoutMs: number;
  readonly #updateTimeoutMs: number;

  constructor({
    server,
    token,
    fetch: fetchImpl = fetch,
    readTimeoutMs = 60_000,
    updateTimeoutMs = 15 * 60_000,
  }: ApiClientOptions) {
    this.#connection = { base: server.replace(/\/+$/, ''), token, fetchImpl };
    this.#readTimeoutMs = readTimeoutMs;
    this.#updateTimeoutMs = updateTimeoutMs;
  }

  /** POSTs `body` to `endpoint` (at `path`, when it has path parameters) and reads its answer. */
  #call<E extends ApiEndpoint>(
    endpoint: E,
    body: z.input<E['body']>,
    path: string = endpoint.path,
  ): Promise<z.output<E['answer']>> {
    return postJson<E['answer']>(this.#connection, path, body, endpoint.answer, this.#readTimeoutMs);
  }

  /**
   * A project's own resource (`/v1/projects/repository`, `/v1/projects/flow`) by `method`: PUT
   * sends it in its body, GET and DELETE name the project in the query.
   */
  #projectResource<E extends ApiEndpoint>(
    endpoint: E,
    method: 'GET' | 'PUT' | 'DELETE',
    params: { url: string },
  ): Promise<z.output<E['answer']>> {
    const query = method === 'PUT' ? '' : `?url=${encodeURIComponent(params.url)}`;
    const body = method === 'PUT' ? params : undefined;
    return postJson<E['answer']>(
      this.#connection,
      `${endpoint.path}${query}`,
      body,
      endpoint.answer,
      this.#readTimeoutMs,
      method,
    );
  }

  /** A sync update: resolves with the audit result once every run is in. */
  update(request: UpdateRequest): Promise<AuditResult> {
    const body: ApiRequest<'update'> = { ...request, mode: 'sync' };
    return postJson(this.#connection, API_ENDPOINTS.update.path, body, auditResultSchema, this.#updateTimeoutMs);
  }

  /** An async update: resolves with its id at once. */
  async startUpdate(request: UpdateRequest): Promise<string> {
    const body: ApiRequest<'update'> = { ...request, mode: 'async' };
    return (await postJson(this.#connection, API_ENDPOINTS.update.path, body, asyncAckSchema, this.#readTimeoutMs)).id;
  }

  /** An update's state: a single update's, or a site update's pages' (`kind: 'site'`). */
  updateStatus(id: string): Promise<UpdateStatusView | SiteUpdateStatusView> {
    return this.#call(
      API_ENDPOINTS.updateStatus,
      {},
      API_ENDPOINTS.updateStatus.path.replace('{id}', encodeURIComponent(id)),
    );
  }

  audit(request: AuditRequest): Promise<AuditResult> {
    return this.#call(API_ENDPOINTS.audit, request);
  }

  compare(request: CompareRequest): Promise<ApiAnswer<'compare'>> {
    return this.#call(API_ENDPOINTS.compare, request);
  }

  /** A cell's filmstrip or third parties' costs: /v1/artifacts's JSON kinds (requests and trace are files, not JSON). */
  artifact(
    request: ApiRequest<'artifacts'> & { kind: 'filmstrip' | 'third-parties' },
  ): Promise<ApiAnswer<'artifacts'>> {
    return this.#call(API_ENDPOINTS.artifacts, request);
  }

  updates(url: string): Promise<ApiAnswer<'updates'>> {
    return this.#call(API_ENDPOINTS.updates, { url });
  }

  async projects(): Promise<ProjectView[]> {
    const { path } = API_ENDPOINTS.projects;
    return (await postJson(this.#connection, path, {}, projectListSchema, this.#readTimeoutMs)).projects;
  }

  /** A new project at `url` with its settings (the admin CLI's rules and defaults); refused 409 if the caller has it. */
  async createProject(url: string, settings: ProjectSettingsGiven = {}): Promise<ProjectView> {
    const { path } = API_ENDPOINTS.projects;
    const body: ApiRequest<'projects'> = { url, ...settings };
    return (await postJson(this.#connection, path, body, projectChangedSchema, this.#readTimeoutMs)).project;
  }

  /** Changes the settings given (budgets change by `budgets`); the project as it is now. */
  async updateProject(url: string, changes: ProjectSettingsGiven): Promise<ProjectView> {
    const { path } = API_ENDPOINTS.projects;
    const body = { url, ...changes };
    return (await postJson(this.#connection, path, body, projectChangedSchema, this.#readTimeoutMs, 'PATCH')).project;
  }

  /** Removes a project with its snapshots and everything else it has. */
  async removeProject(url: string): Promise<void> {
    const path = `${API_ENDPOINTS.projects.path}?url=${encodeURIComponent(url)}`;
    await postJson(this.#connection, path, undefined, projectRemovedSchema, this.#readTimeoutMs, 'DELETE');
  }

  /** A project's budgets; with `set`, replaced first. */
  budgets(url: string, set?: Budgets): Promise<ApiAnswer<'budgets'>> {
    return this.#call(API_ENDPOINTS.budgets, { url, ...set });
  }

  /** The caller's webhooks; with a target, one is added first (`created`, with its secret), with `remove`, one is removed. */
  webhooks(request: WebhooksRequest = {}): Promise<ApiAnswer<'webhooks'>> {
    return this.#call(API_ENDPOINTS.webhooks, request);
  }

  async annotations(url: string, range: AnnotationRange = {}): Promise<ApiAnswer<'annotations'>['annotations']> {
    return (await this.#call(API_ENDPOINTS.annotations, { url, ...range })).annotations;
  }

  async annotate(request: AnnotationRequest): Promise<NonNullable<ApiAnswer<'annotations'>['added']>> {
    return (await this.#call(API_ENDPOINTS.annotations, request)).added!;
  }

  /** Whether a project has login credentials (names only); with `set`, replaced first; with `clear`, forgotten. */
  credentials(url: string, change: { set?: PageAuth; clear?: boolean } = {}): Promise<ApiAnswer<'credentials'>> {
    const body = { url, ...(change.set ? { auth: change.set } : {}), ...(change.clear ? { clear: true } : {}) };
    return this.#call(API_ENDPOINTS.credentials, body);
  }

  /** A project's link to its repository: never its secrets, only that they are set. */
  async repository(url: string): Promise<RepositoryLinkView> {
    return repositoryLinkViewSchema.parse(await this.#projectResource(API_ENDPOINTS.repository, 'GET', { url }));
  }

  /** Links a project to its repository, replacing its link; the token and webhook secret travel in the body alone. */
  async linkRepository(link: ApiRequest<'repository'>): Promise<RepositoryLinkView> {
    return repositoryLinkViewSchema.parse(await this.#projectResource(API_ENDPOINTS.repository, 'PUT', link));
  }

  /** Removes a project's repository link (404, as ApiClientError, when it has none). */
  async unlinkRepository(url: string): Promise<void> {
    await this.#projectResource(API_ENDPOINTS.repository, 'DELETE', { url });
  }

  /** A project's user flow (`flow` null: none, its updates measure a navigation of its URL). */
  async flow(url: string): Promise<FlowView> {
    return flowViewSchema.parse(await this.#projectResource(API_ENDPOINTS.flow, 'GET', { url }));
  }

  /** Replaces a project's flow; a refusal (400, as ApiClientError) names the step it is about. */
  async setFlow(url: string, flow: Flow): Promise<FlowView> {
    const body: ApiRequest<'flow'> = { url, flow };
    return flowViewSchema.parse(await this.#projectResource(API_ENDPOINTS.flow, 'PUT', body));
  }

  /** Removes a project's flow (404, as ApiClientError, when it has none): a navigation of its URL again. */
  async removeFlow(url: string): Promise<void> {
    await this.#projectResource(API_ENDPOINTS.flow, 'DELETE', { url });
  }

  /** The organisation's tokens (admins only), revoked and expired ones included; never a secret. */
  async listTokens(): Promise<TokenView[]> {
    const { path } = API_ENDPOINTS.tokens;
    return (await postJson(this.#connection, path, undefined, tokenListSchema, this.#readTimeoutMs, 'GET')).tokens;
  }

  /** A new token for the caller in its organisation; its secret is in `token`, this once. */
  createToken(request: ApiRequest<'tokens'>): Promise<TokenCreated> {
    return postJson(this.#connection, API_ENDPOINTS.tokens.path, request, tokenCreatedSchema, this.#readTimeoutMs);
  }

  /** Revokes a token of the organisation by its prefix (404, as ApiClientError, for any other). */
  async revokeToken(prefix: string): Promise<void> {
    const path = `${API_ENDPOINTS.tokens.path}?prefix=${encodeURIComponent(prefix)}`;
    await postJson(this.#connection, path, undefined, tokenRevokedSchema, this.#readTimeoutMs, 'DELETE');
  }

  async listMembers(): Promise<MemberView[]> {
    const { path } = API_ENDPOINTS.members;
    return (await postJson(this.#connection, path, undefined, memberListSchema, this.#readTimeoutMs, 'GET')).members;
  }

  /** Adds an existing user to the organisation with `role`, or changes a member's role (admins only). */
  async setMember(user: string, role: Role): Promise<MemberView> {
    const { path } = API_ENDPOINTS.members;
    const body: ApiRequest<'members'> = { user, role };
    return (await postJson(this.#connection, path, body, memberChangedSchema, this.#readTimeoutMs, 'PUT')).member;
  }

  /** Removes a member (409, as ApiClientError, for the organisation's last admin). */
  async removeMember(user: string): Promise<void> {
    const path = `${API_ENDPOINTS.members.path}?user=${encodeURIComponent(user)}`;
    await postJson(this.#connection, path, undefined, memberRemovedSchema, this.#readTimeoutMs, 'DELETE');
  }

  /** The organisation's sites, by origin. */
  async sites(): Promise<SiteView[]> {
    const { path } = API_ENDPOINTS.sites;
    return (await postJson(this.#connection, path, undefined, siteListSchema, this.#readTimeoutMs, 'GET')).sites;
  }

  /** A new site at `origin` (scheme, host and port); refused 409 if the organisation has it. */
  async createSite(origin: string, settings: SiteSettingsGiven = {}): Promise<SiteView> {
    const body: ApiRequest<'sites'> = { origin, ...settings };
    return (await postJson(this.#connection, API_ENDPOINTS.sites.path, body, siteChangedSchema, this.#readTimeoutMs))
      .site;
  }

  /** Changes the settings and budgets given of the site with that id; the site as it is now. */
  async updateSite(id: string, changes: SiteSettingsGiven & SiteBudgetsGiven): Promise<SiteView> {
    const { path } = API_ENDPOINTS.sites;
    return (await postJson(this.#connection, path, { id, ...changes }, siteChangedSchema, this.#readTimeoutMs, 'PATCH'))
      .site;
  }

  /** Removes a site with its pages. */
  async removeSite(id: string): Promise<void> {
    const path = `${API_ENDPOINTS.sites.path}?id=${encodeURIComponent(id)}`;
    await postJson(this.#connection, path, undefined, siteRemovedSchema, this.#readTimeoutMs, 'DELETE');
  }

  /** A site's groups with their medians, budget failures and trends, its worst pages, its last discovery's changes. */
  siteOverview(id: string): Promise<ApiAnswer<'siteOverview'>> {
    return this.#call(
      API_ENDPOINTS.siteOverview,
      {},
      API_ENDPOINTS.siteOverview.path.replace('{id}', encodeURIComponent(id)),
    );
  }

  /** A site update (its sampled pages, `pages`, or `all`): the plan, and its id unless `planOnly` (429 past the limit). */
  siteUpdate(id: string, body: z.input<typeof siteUpdateBodySchema> = {}): Promise<SiteUpdateAnswer> {
    return this.#call(
      API_ENDPOINTS.siteUpdate,
      body,
      API_ENDPOINTS.siteUpdate.path.replace('{id}', encodeURIComponent(id)),
    );
  }

  overview({ startDate, endDate, ...rest }: OverviewRequest): Promise<ApiAnswer<'overview'>> {
    return this.#call(API_ENDPOINTS.overview, { dateRange: { startDate, endDate }, ...rest });
  }

  /** A page of the organisation's audit log, the newest first (an admin's); its `next` as `before` goes on. */
  auditLog(request: ApiRequest<'auditLog'> = {}): Promise<ApiAnswer<'auditLog'>> {
    return this.#call(API_ENDPOINTS.auditLog, request);
  }

  /** Polls an async update until it is done or failed. */
  waitForUpdate(id: string, options: WaitOptions = {}): Promise<UpdateStatusView> {
    const read = async (updateId: string) => {
      const status = await this.updateStatus(updateId);
      if ('kind' in status) throw new Error(`${updateId} is a site update: read it with updateStatus`);
      return status;
    };
    return waitForUpdate(read, id, {
      timeoutMs: this.#updateTimeoutMs,
      ...options,
    });
  }
}
