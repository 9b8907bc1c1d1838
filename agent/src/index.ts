export {
  encodeReplyBytes,
  startAgent,
  type ReplyShape,
  type Agent,
  type AgentDeps,
  type ReplyEncoder,
} from './agent.ts';
export {
  createLighthouseRunner,
  type AuditRunner,
  type CpuCalibration,
  type RunRequest,
  type RunOutput,
} from './lighthouse-runner.ts';
export { chromeFlags } from './chrome-flags.ts';
export { RunFailure } from './run-failure.ts';
export { compactScreenshots, MAX_PICTURE_BYTES } from './screenshot-compactor.ts';
export { startGuardProxy, type GuardProxy } from './guard-proxy.ts';
export { probeSecurity } from './security-probe.ts';
export { exitOnUnhandledRejection, isBrowserTeardownError } from './browser-teardown-errors.ts';
export { startGuardedRunner, type GuardedRunnerOptions } from './guarded-runner.ts';
export { createRunnerPool, type RunnerPool } from './runner-pool.ts';
export { createAgentMetrics, type AgentMetrics, type RunObserver } from './metrics.ts';
export { createLocalAgent, type LocalAgent } from './local-agent.ts';
export { agentSettings } from './config.ts';
export { agentIdentitySettings } from './settings/agent-identity.ts';
export { chromeRunSettings } from './settings/chrome-runs.ts';
