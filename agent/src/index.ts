export { encodeReplyBytes, startAgent, type Agent, type ReplyEncoder } from './agent.ts';
export {
  createLighthouseRunner,
  type PageRunner,
  type CpuCalibration,
  type RunRequest,
  type RunOutput,
} from './lighthouse-runner.ts';
export { chromeFlags } from './chrome-flags.ts';
export { RunFailure } from './run-failure.ts';
export { compactScreenshots } from './screenshot-compactor.ts';
export { startGuardProxy, type GuardProxy } from './guard-proxy.ts';
export { probeSecurity } from './security-probe.ts';
export { exitOnUnhandledRejection } from './browser-teardown-errors.ts';
export { createRunnerPool, type RunnerPool } from './runner-pool.ts';
export { createAgentMetrics } from './metrics.ts';
export { createLocalAgent } from './local-agent.ts';
export { chromeRunSettings } from './settings/chrome-runs.ts';
