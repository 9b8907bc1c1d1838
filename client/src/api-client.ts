import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import {
  auditResultSchema,
  type AuditResult,
  annotationListSchema,
  type AnnotationList,
  credentialsViewSchema,
  type CredentialsView,
  type PageAuth,
  projectBudgetsSchema,
  type Budgets,
  type ProjectBudgets,
  compareResultSchema,
  type CompareResult,
  webhookListSchema,
  type WebhookList,
  errorEnvelopeSchema,
  type ErrorEnvelope,
  type Device,
  type Location,
  type Section,
  asyncAckSchema,
  overviewResponseSchema,
  projectListSchema,
  snapshotListSchema,
  updateStatusSchema,
  type OverviewRecord,
  type ProjectList,
  type SnapshotList,
  type UpdateStatusView,
} from '@perfwatch/common';

/**
 * The operations this client calls, by path and method. A test holds them against the
 * gateway's `/v1/openapi.json`, so the client cannot call a path or send a body the API
 * does not document. Every call is a POST with a JSON body: no URL-encoding surprises,
 * and arrays stay arrays.
 */
export const CLIENT_OPERATIONS = {
  update: '/v1/update',
  audit: '/v1/audit',
  compare: '/v1/compare',
  updates: '/v1/updates',
  updateStatus: '/v1/updates/{id}',
  overview: '/v1/overview',
  projects: '/v1/projects',
  budgets: '/v1/budgets',
  webhooks: '/v1/webhooks',
  annotations: '/v1/annotations',
  credentials: '/v1/credentials',
} as const;

export interface AnnotationRequest {
  url: string;
  text: string;
  /** `yyyy-MM-ddTHH:mm:ss`, UTC; absent: now. */
  date?: string;
  link?: string;
}

export type WebhooksRequest =
  Record<string, never> | { targetUrl: string; project?: string; format?: 'json' | 'slack' } | { remove: string };

export interface UpdateRequest {
  url: string;
  device?: Device;
  updateType?: 'manual' | 'ci';
}

export interface AuditRequest {
  url: string;
  /** `yyyy-MM-ddTHH:mm:ss`, UTC, as the API returns it. */
  date: string;
  device?: Device;
  location?: Location[];
}

export interface CompareRequest {
  url: string;
  /** The two snapshot dates, `yyyy-MM-ddTHH:mm:ss`, UTC. */
  from: string;
  to: string;
  device?: Device;
  location?: Location[];
}

export interface OverviewRequest {
  /** `yyyy-MM-dd`. */
  startDate: string;
  endDate: string;
  domain?: string;
  updateType?: 'manual' | 'scheduled' | 'ci';
  sections?: Section[];
}

/** The API answered with an error envelope (or something that is not the API). */
export class ApiClientError extends Error {
  readonly httpStatus: number;
  readonly envelope: ErrorEnvelope | null;

  constructor(httpStatus: number, envelope: ErrorEnvelope | null, fallback: string) {
    const detail = envelope ? [envelope.message, ...envelope.errors].join(' ') : fallback;
    super(`HTTP ${httpStatus}${envelope ? ` ${envelope.status}` : ''}: ${detail}`);
    this.name = 'ApiClientError';
    this.httpStatus = httpStatus;
    this.envelope = envelope;
  }
}

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

  #read<S extends z.ZodType>(path: string, body: object, schema: S): Promise<z.output<S>> {
    return postJson(this.#connection, path, body, schema, this.#readTimeoutMs);
  }

  /** A sync update: resolves with the audit result once every run is in. */
  update(request: UpdateRequest): Promise<AuditResult> {
    const body = { ...request, mode: 'sync' };
    return postJson(this.#connection, CLIENT_OPERATIONS.update, body, auditResultSchema, this.#updateTimeoutMs);
  }

  /** An async update: resolves with its id at once. */
  async startUpdate(request: UpdateRequest): Promise<string> {
    return (await this.#read(CLIENT_OPERATIONS.update, { ...request, mode: 'async' }, asyncAckSchema)).id;
  }

  updateStatus(id: string): Promise<UpdateStatusView> {
    const path = CLIENT_OPERATIONS.updateStatus.replace('{id}', encodeURIComponent(id));
    return this.#read(path, {}, updateStatusSchema);
  }

  audit(request: AuditRequest): Promise<AuditResult> {
    return this.#read(CLIENT_OPERATIONS.audit, request, auditResultSchema);
  }

  compare(request: CompareRequest): Promise<CompareResult> {
    return this.#read(CLIENT_OPERATIONS.compare, request, compareResultSchema);
  }

  updates(url: string): Promise<SnapshotList> {
    return this.#read(CLIENT_OPERATIONS.updates, { url }, snapshotListSchema);
  }

  async projects(): Promise<ProjectList['projects']> {
    return (await this.#read(CLIENT_OPERATIONS.projects, {}, projectListSchema)).projects;
  }

  /** A project's budgets; with `set`, replaced first. */
  budgets(url: string, set?: Budgets): Promise<ProjectBudgets> {
    return this.#read(CLIENT_OPERATIONS.budgets, { url, ...set }, projectBudgetsSchema);
  }

  /** The caller's webhooks; with a target, one is added first (`created`, with its secret), with `remove`, one is removed. */
  webhooks(request: WebhooksRequest = {}): Promise<WebhookList> {
    return this.#read(CLIENT_OPERATIONS.webhooks, request, webhookListSchema);
  }

  async annotations(url: string, range: { from?: string; to?: string } = {}): Promise<AnnotationList['annotations']> {
    return (await this.#read(CLIENT_OPERATIONS.annotations, { url, ...range }, annotationListSchema)).annotations;
  }

  async annotate(request: AnnotationRequest): Promise<NonNullable<AnnotationList['added']>> {
    return (await this.#read(CLIENT_OPERATIONS.annotations, request, annotationListSchema)).added!;
  }

  /** Whether a project has login credentials (names only); with `set`, replaced first; with `clear`, forgotten. */
  credentials(url: string, change: { set?: PageAuth; clear?: boolean } = {}): Promise<CredentialsView> {
    const body = { url, ...(change.set ? { auth: change.set } : {}), ...(change.clear ? { clear: true } : {}) };
    return this.#read(CLIENT_OPERATIONS.credentials, body, credentialsViewSchema);
  }

  overview({ startDate, endDate, ...rest }: OverviewRequest): Promise<OverviewRecord[]> {
    const body = { dateRange: { startDate, endDate }, ...rest };
    return this.#read(CLIENT_OPERATIONS.overview, body, overviewResponseSchema);
  }

  /** Polls an async update until it is done or failed. */
  waitForUpdate(id: string, options: WaitOptions = {}): Promise<UpdateStatusView> {
    return waitForUpdate((updateId) => this.updateStatus(updateId), id, {
      timeoutMs: this.#updateTimeoutMs,
      ...options,
    });
  }
}

/** Where the client's requests go, and as whom. */
interface Connection {
  base: string;
  token: string;
  fetchImpl: typeof fetch;
}

/** POSTs `body` as JSON and reads the answer against `schema`; an error envelope becomes ApiClientError. */
async function postJson<S extends z.ZodType>(
  { base, token, fetchImpl }: Connection,
  path: string,
  body: object,
  schema: S,
  timeoutMs: number,
): Promise<z.output<S>> {
  let response: Response;
  try {
    response = await fetchImpl(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause;
    throw new Error(`cannot reach ${base}: ${cause?.message ?? (error as Error).message}`, { cause: error });
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ApiClientError(response.status, null, `not JSON from ${base}${path}: ${text.slice(0, 200)}`);
  }
  if (!response.ok) {
    const envelope = errorEnvelopeSchema.safeParse(json);
    throw new ApiClientError(response.status, envelope.success ? envelope.data : null, text.slice(0, 200));
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new ApiClientError(
      response.status,
      null,
      `unexpected answer from ${path}: ${parsed.error.issues
        .map((i) => `${i.path.join('.')}: ${i.message}`)
        .slice(0, 3)
        .join('; ')}`,
    );
  return parsed.data;
}

async function waitForUpdate(
  read: (id: string) => Promise<UpdateStatusView>,
  id: string,
  { pollMs = 2_000, timeoutMs, onStatus }: WaitOptions & { timeoutMs: number },
): Promise<UpdateStatusView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await read(id);
    onStatus?.(status);
    if (status.status === 'done' || status.status === 'failed') return status;
    if (Date.now() + pollMs > deadline)
      throw new Error(`update ${id} is still ${status.status} after ${Math.round(timeoutMs / 1000)} s`);
    await sleep(pollMs);
  }
}
