export { startAgent, type Agent, type AgentDeps } from './agent.ts';
export { createLighthouseRunner, type AuditRunner, type RunRequest, type RunOutput } from './lighthouse-runner.ts';
export { chromeFlags } from './chrome-flags.ts';
export { RunFailure } from './run-failure.ts';
export { createTargetGuard, parseAllowList, isAllowedAddress, TargetRefused, type TargetGuard } from './target-guard.ts';
export { startGuardProxy, type GuardProxy } from './guard-proxy.ts';
export { probeSecurity } from './security-probe.ts';
export { exitOnUnhandledRejection, isBrowserTeardownError } from './browser-teardown-errors.ts';
