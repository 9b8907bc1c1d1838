export { createApp, type AppDeps } from './http/app.ts';
export { createServer, type GatewayServer } from './http/server.ts';
export { startGateway, type GatewayRuntime } from './runtime.ts';
export {
  gatewayConfigWith,
  gatewaySettings,
  httpOptionsOf,
  loadGatewayConfig,
  webhookSenderOptionsOf,
  type GatewayConfig,
} from './config.ts';
export { createNatsDispatcher } from './dispatch/nats/nats-dispatcher.ts';
export { receivedRun, type Dispatcher, type ReceivedRun, type RunOutcome } from './dispatch/run-outcome.ts';
export { ResultBytes } from './snapshots/result-bytes.ts';
export { createUpdateService, type UpdateService } from './updates/update-service.ts';
export { KPI_ORDER, KPI_PROJECTION, MongoStore } from './store/mongo-store.ts';
export { SqliteStore } from './store/sqlite-store.ts';
export { storeEnvFields, storeFromEnv } from './store/open-store.ts';
export type {
  Store,
  ProjectRecord,
  UserRecord,
  SnapshotRecord,
  LocationSnapshot,
  NewLocationSnapshot,
} from './store/store.ts';
export { issueToken, tokenDigest } from './accounts/tokens.ts';
export { createAdmin, type Admin } from './admin/admin.ts';
export { createSecretBox } from './accounts/secret-box.ts';
export { MAX_AGENTS_PER_LOCATION, startAgentRegistry } from './dispatch/nats/agent-registry.ts';
export type { AgentRegistry } from './dispatch/agent-registry.ts';
export { startScheduler, tickUpdateId, type Scheduler } from './scheduling/scheduler.ts';
export { UPDATE_STREAM, UPDATE_SUBJECT, updateSubject } from './dispatch/nats/jetstream-update-queue.ts';
