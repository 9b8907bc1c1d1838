export * from './ids.ts';
export * from './dates.ts';
export * from './errors.ts';
export * from './env-config.ts';
export * from './gzip-sized.ts';
export * from './logger.ts';
export * from './shutdown.ts';
export * from './lighthouse-result.ts';
export * from './run-metrics.ts';
export * from './median-run.ts';
export * from './lighthouse-kpis.ts';
export * from './audit-messages.ts';
export type * from './in-process-agent.ts';
export * from './audit-codec.ts';
export * from './audit-result.ts';
export * from './overview.ts';
export * from './crux.ts';
export * from './page-kpis.ts';
export * from './security-kpis.ts';
export * from './agent-presence.ts';
export * from './version.ts';
export * from './ops-metrics.ts';
export * from './nats-connect.ts';
export * from './ops-server.ts';
export * from './cpu-calibration.ts';
export * from './mann-whitney.ts';
export * from './compare-result.ts';
export * from './compare-link.ts';
export * from './own-keys.ts';
export * from './budgets.ts';
export * from './stored-checks.ts';
export * from './webhooks.ts';
export * from './annotations.ts';
export * from './audit-log.ts';
export * from './revision.ts';
export * from './access.ts';
export * from './page-auth.ts';
export * from './flow.ts';
export * from './flow-results.ts';
export * from './run-digest.ts';
export * from './target-guard.ts';
export * from './cli/index.ts';
export * from './api/endpoints.ts';
export * from './api/flow-requests.ts';
export * from './api/forge-requests.ts';
export { normalizeProjectUrl } from './api/request-fields.ts';
export {
  projectChangedSchema,
  projectRemovedSchema,
  type ProjectSettingsGiven,
  type ProjectsParams,
} from './api/project-requests.ts';
export {
  tokenCreatedSchema,
  tokenListSchema,
  tokenRevokedSchema,
  type NewTokenRequest,
  type TokenCreated,
  type TokensParams,
  type TokenView,
} from './api/token-requests.ts';
export {
  memberChangedSchema,
  memberListSchema,
  memberRemovedSchema,
  type MembersParams,
  type MemberView,
} from './api/member-requests.ts';
export {
  siteChangedSchema,
  siteListSchema,
  siteRemovedSchema,
  type SiteBudgetsGiven,
  type SiteSettingsGiven,
  type SitesParams,
  type SiteView,
} from './api/site-requests.ts';
export { SITE_TREND_DAYS, siteOverviewSchema, WORST_PAGES, type SiteOverview } from './api/site-overview.ts';
export {
  siteUpdateAnswerSchema,
  siteUpdateBodySchema,
  siteUpdateStatusSchema,
  type SiteUpdateAnswer,
  type SiteUpdatePageStatus,
  type SiteUpdatePlan,
  type SiteUpdateRequest,
  type SiteUpdateStatusView,
} from './api/site-update-requests.ts';
export { parseCommit, parsePullRequest } from './api/revision-fields.ts';
export { MAX_UPDATES_PAGE } from './api/snapshot-requests.ts';
export { WEBHOOK_PAGE } from './api/webhook-requests.ts';
export { MAX_ANNOTATIONS_PER_PROJECT } from './api/annotation-requests.ts';
export { AUDIT_LOG_PAGE, auditLogCursor, type AuditLogParams } from './api/audit-log-requests.ts';
export * from './settings/index.ts';
export * from './forge/index.ts';
export * from './artifact-messages.ts';
export * from './artifact-analysis.ts';
