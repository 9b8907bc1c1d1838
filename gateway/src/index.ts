export { createApp, type AppDeps } from './app.ts';
export { createServer, type GatewayServer } from './server.ts';
export { startGateway, type GatewayRuntime } from './gateway-runtime.ts';
export { gatewayConfigWith, loadGatewayConfig, type GatewayConfig } from './config.ts';
export { createNatsDispatcher } from './nats-dispatcher.ts';
export { receivedRun, type Dispatcher, type ReceivedRun, type RunOutcome } from './run-outcome.ts';
export { ResultBytes } from './result-bytes.ts';
export { createUpdateService, type UpdateService } from './update-service.ts';
export { KPI_ORDER, KPI_PROJECTION, MongoStore } from './store/mongo-store.ts';
export { SqliteStore } from './store/sqlite-store.ts';
export type {
  Store,
  ProjectRecord,
  UserRecord,
  SnapshotRecord,
  LocationSnapshot,
  NewLocationSnapshot,
} from './store/store.ts';
export { issueToken, tokenDigest } from './tokens.ts';
export { createAdmin, type Admin } from './admin/admin.ts';
export { createSecretBox } from './secret-box.ts';
export { DEMO_LOGIN, startDemoSite, type DemoSite } from './local/demo-site-server.ts';
export { MAX_AGENTS_PER_LOCATION, startAgentRegistry, type AgentRegistry } from './agent-registry.ts';
export { startScheduler, tickUpdateId, type Scheduler } from './scheduler.ts';
export { UPDATE_STREAM, UPDATE_SUBJECT, updateSubject } from './update-queue.ts';
