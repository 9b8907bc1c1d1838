import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { API_ENDPOINTS, type ApiEndpoint, type ApiEndpointName } from '@perfwatch/common';
import type { SecretBox } from '../accounts/secret-box.ts';
import { tokensRoute } from '../accounts/tokens-route.ts';
import { webhooksRoute } from '../alerts/webhooks-route.ts';
import type { AuditLog } from '../audit-log/audit-log.ts';
import { auditLogRoute } from '../audit-log/audit-log-route.ts';
import type { ArtifactReads } from '../artifacts/artifacts-route.ts';
import { ARTIFACTS_ENDPOINT } from '../artifacts/artifacts-endpoint.ts';
import type { EndpointDoc, ResponseDoc } from './endpoint-doc.ts';
import { repositoryRoute } from '../forge/repository-route.ts';
import type { Access } from './authorize.ts';
import type { WebhookRules } from '../alerts/webhook-registry.ts';
import { budgetsRoute } from '../projects/budgets-route.ts';
import type { CredentialTrust } from '../projects/credential-trust.ts';
import { credentialsRoute } from '../projects/credentials-route.ts';
import { flowRoute } from '../projects/flow-route.ts';
import { projectsRoute } from '../projects/projects-route.ts';
import { annotationsRoute } from '../snapshots/annotations-route.ts';
import { auditRoute } from '../snapshots/audit-route.ts';
import { compareRoute } from '../snapshots/compare-route.ts';
import type { HeavyReads } from '../snapshots/heavy-reads.ts';
import { overviewRoute } from '../snapshots/overview-route.ts';
import { updatesRoute } from '../snapshots/updates-route.ts';
import type {
  AccountsStore,
  AnnotationsStore,
  AuditLogStore,
  ForgeStore,
  KpisStore,
  ProjectsStore,
  SnapshotReadsStore,
  UpdatesStore,
  WebhooksStore,
} from '../store/store.ts';
import type { StartAsync } from '../updates/async-updates.ts';
import type { UpdateService } from '../updates/update-service.ts';
import { updateRoute, type SyncUpdateLimit } from '../updates/update-route.ts';
import { updateStatusRoute } from '../updates/update-status-route.ts';
import { membersRoute } from '../teams/members-route.ts';
import type { TeamsStore } from '../teams/store/teams-store.ts';
import { sitesRoute } from '../sites/sites-route.ts';
import { siteOverviewRoute } from '../sites/site-overview-route.ts';
import { siteUpdateRoute, type SiteUpdateRouteStore } from '../sites/site-update-route.ts';
import type { SiteUpdatesStore } from '../sites/store/site-updates-store.ts';
import type { SitesStore } from '../sites/store/sites-store.ts';
import type { SiteDiscoveries } from '../sites/site-discoveries.ts';
import type { SiteDiscoveryStore } from '../sites/site-discovery-run.ts';

/** What the routes are built from: the app's dependencies, resolved (app.ts). */
export interface RouteDeps {
  /** The slices the routes read and write (snapshots are written by updates, not by a route). */
  store: ProjectsStore &
    UpdatesStore &
    SnapshotReadsStore &
    KpisStore &
    AnnotationsStore &
    WebhooksStore &
    Pick<ForgeStore, 'findForgeLink' | 'setForgeLink' | 'removeForgeLink'> &
    AuditLogStore &
    Pick<AccountsStore, 'listUsers'> &
    Pick<AccountsStore, 'addToken' | 'findToken' | 'listOrganisationTokens' | 'revokeToken' | 'findUserByName'> &
    Pick<TeamsStore, 'listMembers' | 'findMembership' | 'setMembership' | 'removeMembership'> &
    Pick<
      SitesStore,
      'listSites' | 'addSite' | 'findSite' | 'setSiteSettings' | 'setSiteBudgets' | 'removeSite' | 'listSitePages'
    > &
    SiteDiscoveryStore &
    SiteUpdateRouteStore &
    Pick<SiteUpdatesStore, 'findSiteUpdate'>;
  updates: UpdateService;
  logger: Logger;
  startAsync: StartAsync;
  syncUpdates?: SyncUpdateLimit | undefined;
  /** A client that reads nothing of a long answer for this long is cut off (ANSWER_STALL_MS). */
  stallMs: number;
  /** The places for reads of stored results, shared by /v1/audit and /v1/compare. */
  reads: HeavyReads;
  /** The artifact store and its retention (issue 35); absent: no artifacts are kept or reported. */
  artifacts?: ArtifactReads | undefined;
  webhookRules: WebhookRules;
  secrets: SecretBox;
  credentialTrust: CredentialTrust;
  /** Where the routes record each change they made (issue 33). */
  auditLog: AuditLog;
  /** Sites' discoveries in the background (issue 34). */
  siteDiscoveries: SiteDiscoveries;
  /** Runs one user may have waiting (MAX_QUEUED_RUNS_PER_USER): what a site update's plan is held to. */
  queuedRunsPerUser: number;
  /** Sites one organisation may have (MAX_SITES_PER_ORG). */
  maxSitesPerOrg: number;
}

/** One endpoint as the gateway serves it: its contract (common), its route, its documentation. */
export interface GatewayEndpoint {
  contract: ApiEndpoint;
  /** The per-user, per-minute limit its requests count against (RATE_LIMIT_*). */
  limit: 'updates' | 'reads';
  route: (deps: RouteDeps) => RequestHandler;
  /** Who may use it: the roles its reads and writes need, what a ci token may do (authorize.ts). */
  access: Access;
  doc: EndpointDoc;
}

/** A POST with a url creates a project; without one it lists them. */
const createsProject = (req: Request): boolean =>
  req.method === 'POST' && typeof req.body === 'object' && req.body !== null && 'url' in req.body;

/** Most endpoints: a viewer reads, an editor writes, a ci token reads its projects. */
const READS_AND_EDITS: Access = { read: 'viewer', write: 'editor', ci: 'read' };

const HEAVY_READ_REFUSED: ResponseDoc = {
  description:
    'Every place this gateway has for reads of stored results (/v1/audit, /v1/compare) stayed taken while the read waited; see Retry-After.',
  retryAfter: true,
};

/** Every endpoint of the API, in the order the OpenAPI document lists them. */
export const GATEWAY_ENDPOINTS: Record<ApiEndpointName, GatewayEndpoint> = {
  update: {
    contract: API_ENDPOINTS.update,
    limit: 'updates',
    access: { read: 'editor', write: 'editor', ci: 'write', isWrite: () => true },
    route: (deps) => updateRoute({ ...deps, clock: deps.artifacts?.clock }),
    doc: {
      summary: 'Run an update of a project',
      answer: 'sync: the audit result of the devices updated; async: an acknowledgement.',
      responses: {
        '502': 'Every run failed.',
        '503': "No agent serves any of the project's locations.",
        '504': 'Every run timed out.',
      },
    },
  },
  updates: {
    contract: API_ENDPOINTS.updates,
    limit: 'reads',
    access: READS_AND_EDITS,
    route: ({ store }) => updatesRoute({ store }),
    doc: {
      summary: 'The snapshot dates of a project, per device, a page at a time (the newest first taken)',
      answer:
        'Per device, the snapshot dates of the page with their locations, ascending; `next` when older ones remain.',
    },
  },
  updateStatus: {
    contract: API_ENDPOINTS.updateStatus,
    limit: 'reads',
    access: READS_AND_EDITS,
    route: ({ store }) => updateStatusRoute({ store }),
    doc: {
      summary: 'Where an async or scheduled update is',
      answer:
        "The update's state; its snapshot date once done, the reason once failed. A site update's id answers its pages' progress instead (`kind: site`).",
      responses: { '404': 'No update of the caller has that id.' },
    },
  },
  audit: {
    contract: API_ENDPOINTS.audit,
    limit: 'reads',
    access: READS_AND_EDITS,
    route: (deps) => auditRoute({ ...deps, clock: deps.artifacts?.clock }),
    doc: {
      summary: 'Read the snapshot of a project at a date',
      answer: 'The snapshot, filtered by device and location.',
      responses: { '503': HEAVY_READ_REFUSED },
    },
  },
  compare: {
    contract: API_ENDPOINTS.compare,
    limit: 'reads',
    access: READS_AND_EDITS,
    route: ({ store, reads, artifacts }) => compareRoute({ store, reads, artifacts }),
    doc: {
      summary: 'Compare two snapshots of a project',
      answer:
        "Per device and location both snapshots have: the median runs' metrics and differences, whether each is beyond run-to-run noise (a Mann-Whitney U test on the reliable runs, 3 a side at least), and the audits and opportunities that changed most.",
      responses: { '503': HEAVY_READ_REFUSED },
    },
  },
  artifacts: ARTIFACTS_ENDPOINT,
  overview: {
    contract: API_ENDPOINTS.overview,
    limit: 'reads',
    access: { read: 'viewer', write: 'editor' },
    route: ({ store, logger, stallMs }) => overviewRoute({ store, logger, stallMs }),
    doc: {
      summary: "KPI records of the caller's projects in a date range",
      answer: 'KPI records, ordered by date, url, device, location, section, kpi.',
      project: false,
    },
  },
  projects: {
    contract: API_ENDPOINTS.projects,
    limit: 'reads',
    access: { ...READS_AND_EDITS, isWrite: createsProject },
    route: ({ store, auditLog }) => projectsRoute({ store, audit: auditLog }),
    doc: {
      summary:
        "List (GET, POST without a url), create (POST with a url), change (PATCH) or remove (DELETE) the caller's projects",
      answer:
        "The caller's projects, ordered by URL; `project` as it is now after a creation (`created`: true) or a change; `removed` after a removal, with its snapshots and everything else it had.",
      project: false,
      bodyRequired: false,
      postResponses: { '409': 'The caller already has a project at that URL.' },
      patchResponses: { '404': 'No project of the caller has that URL.' },
      deleteResponses: { '404': 'No project of the caller has that URL.' },
    },
  },
  budgets: {
    contract: API_ENDPOINTS.budgets,
    limit: 'reads',
    access: READS_AND_EDITS,
    route: ({ store, auditLog }) => budgetsRoute({ store, audit: auditLog }),
    doc: {
      summary: "Read or replace the budgets a project's snapshots are checked against",
      answer:
        "The project's budgets (after the replacement, when limits were given). Every snapshot stored afterwards carries `checks` per device and location.",
    },
  },
  webhooks: {
    contract: API_ENDPOINTS.webhooks,
    limit: 'reads',
    // A webhook's URL is a secret (a Slack webhook's path is its key): an editor's to see, as to change.
    access: { read: 'editor', write: 'editor' },
    route: ({ store, webhookRules, auditLog }) => webhooksRoute({ store, rules: webhookRules, audit: auditLog }),
    doc: {
      summary: "List, add or remove the caller's webhooks",
      answer:
        "The caller's webhooks with their newest deliveries; `created` (with its signing secret, shown this once) after an add, `removed` after a removal.",
      project: false,
      bodyRequired: false,
      postResponses: {
        '404': 'No project of the caller has that URL (`project`), or no webhook of the caller has that id (`remove`).',
      },
    },
  },
  annotations: {
    contract: API_ENDPOINTS.annotations,
    limit: 'reads',
    access: { read: 'viewer', write: 'editor', ci: 'write' },
    route: ({ store, auditLog }) => annotationsRoute({ store, audit: auditLog }),
    doc: {
      summary: "List a project's annotations (deploy markers), or add one",
      answer: "The project's annotations by date; `added` after an add.",
    },
  },
  credentials: {
    contract: API_ENDPOINTS.credentials,
    limit: 'reads',
    access: { read: 'viewer', write: 'admin' },
    route: ({ store, secrets, credentialTrust, auditLog }) =>
      credentialsRoute({ store, secrets, credentialTrust, audit: auditLog }),
    doc: {
      summary: 'Whether a project has credentials for its login; set (POST only) or clear them',
      answer:
        'Whether the project has credentials, with the cookie and header names and the number of login steps; never a value.',
      // Secrets are set by POST alone (never in a URL), so only POST can meet a gateway without a key.
      postResponses: {
        '503': 'Credentials were given, and this gateway has no PERFWATCH_SECRETS_KEY to seal them with.',
      },
    },
  },
  flow: {
    contract: API_ENDPOINTS.flow,
    limit: 'reads',
    access: READS_AND_EDITS,
    route: ({ store, webhookRules, auditLog }) => flowRoute({ store, guard: webhookRules.targets, audit: auditLog }),
    doc: {
      summary: "Read (GET), replace (PUT) or remove (DELETE) a project's user flow",
      answer:
        'The flow (GET: null when the project has none; PUT: as stored); `removed` (DELETE). With a flow, updates run its steps instead of a navigation (docs/flows.md).',
      responses: { '404': 'No project of the caller has that URL, or (DELETE) it has no flow.' },
    },
  },
  repository: {
    contract: API_ENDPOINTS.repository,
    limit: 'reads',
    access: { read: 'viewer', write: 'admin' },
    route: ({ store, secrets, auditLog }) => repositoryRoute({ store, secrets, audit: auditLog }),
    doc: {
      summary: "Read (GET), replace (PUT) or remove (DELETE) a project's link to its repository",
      answer:
        'The link (GET, PUT), with `tokenSet` and `webhookSecretSet` in place of the secrets, which are never returned; `removed` (DELETE).',
      responses: { '404': 'No project of the caller has that URL, or (GET, DELETE) it is linked to no repository.' },
      postResponses: {
        '503': 'This gateway has no PERFWATCH_SECRETS_KEY to seal the token and the webhook secret with.',
      },
    },
  },
  tokens: {
    contract: API_ENDPOINTS.tokens,
    limit: 'reads',
    access: { read: 'admin', write: 'admin' },
    route: ({ store, auditLog }) => tokensRoute({ store, audit: auditLog }),
    doc: {
      summary: "List (GET), make (POST) or revoke (DELETE) the API tokens of the caller's organisation",
      answer:
        "The organisation's tokens, never their secrets (GET); the new token, acting for the caller, with its secret in `token`, shown this once (POST); `revoked` (DELETE).",
      project: false,
      deleteResponses: { '404': "No token of the caller's organisation has that prefix." },
    },
  },
  members: {
    contract: API_ENDPOINTS.members,
    limit: 'reads',
    access: { read: 'viewer', write: 'admin' },
    route: ({ store, auditLog }) => membersRoute({ store, audit: auditLog }),
    doc: {
      summary: "List (GET), add or change (PUT) or remove (DELETE) the members of the caller's organisation",
      answer:
        'The members with their roles (GET); the member as they are now, `added` when they were not one (PUT); `removed` (DELETE).',
      project: false,
      postResponses: {
        '404': 'No user has that name.',
        '409': 'The change would leave the organisation without an admin.',
      },
      deleteResponses: {
        '404': 'No user has that name, or they are no member of the organisation.',
        '409': "The member is the organisation's last admin.",
      },
    },
  },
  auditLog: {
    contract: API_ENDPOINTS.auditLog,
    limit: 'reads',
    access: { read: 'admin', write: 'admin' },
    route: ({ store }) => auditLogRoute({ store }),
    doc: {
      summary: "A page of the caller's organisation's audit log: who changed what, and when",
      answer:
        "The entries of the page, the newest first, each with its actor (the member's name as it is now, the token's public prefix or a dashboard session), action, target and details, never a secret's value; `next` when older ones remain.",
      project: false,
      bodyRequired: false,
    },
  },
  sites: {
    contract: API_ENDPOINTS.sites,
    limit: 'reads',
    // Every POST makes a site; a ci token reads the sites of the projects it lists.
    access: { ...READS_AND_EDITS, isWrite: (req) => req.method === 'POST' },
    route: ({ store, auditLog, siteDiscoveries, maxSitesPerOrg }) =>
      sitesRoute({ store, audit: auditLog, discoveries: siteDiscoveries, maxSites: maxSitesPerOrg }),
    doc: {
      summary:
        "List (GET), create (POST), change (PATCH) or remove (DELETE) the organisation's sites: whole sites watched by their origin",
      answer:
        "The organisation's sites, ordered by origin; `site` as it is now after a creation (`created`: true) or a change; `removed` after a removal, with its pages.",
      project: false,
      postResponses: { '409': 'The organisation already has a site at that origin.' },
      patchResponses: { '404': 'No site of the organisation has that id.' },
      deleteResponses: { '404': 'No site of the organisation has that id.' },
    },
  },
  siteOverview: {
    contract: API_ENDPOINTS.siteOverview,
    limit: 'reads',
    access: READS_AND_EDITS,
    route: ({ store }) => siteOverviewRoute({ store }),
    doc: {
      summary:
        "A site's groups with the medians of their sampled pages' latest snapshots, budget failures and trends; its worst pages; its last discovery's new and removed pages",
      answer:
        "Per group (route template) and device the median score, LCP, TBT and CLS of its sampled pages' latest snapshots (null when none is measured: `measured` false) and their failing budget checks, with a daily median score over 30 days; the sampled pages per device, the lowest score first; the pages the last discovery added and lost.",
      project: false,
      bodyRequired: false,
      responses: { '404': 'No site of the organisation has that id.' },
    },
  },
  siteUpdate: {
    contract: API_ENDPOINTS.siteUpdate,
    limit: 'updates',
    // As /v1/update: it queues by GET or POST; a ci token only of pages that are all its projects.
    access: { read: 'editor', write: 'editor', ci: 'write', isWrite: () => true },
    route: ({ store, startAsync, queuedRunsPerUser }) => siteUpdateRoute({ store, startAsync, queuedRunsPerUser }),
    doc: {
      summary:
        'Run one async update of many pages of a site (its sampled pages, named ones, or all), its plan answered first',
      answer:
        'The plan (pages × devices × locations × runs, the runs you already have waiting and your limit) and the id of the site update for /v1/updates/{id}; null with planOnly, when nothing is queued.',
      project: false,
      responses: {
        '404': 'No site of the organisation has that id.',
        '429': {
          description:
            'The plan passes your limit of runs waiting (BACKLOG_FULL, its numbers in errors): nothing was queued.',
          retryAfter: true,
        },
      },
    },
  },
};
