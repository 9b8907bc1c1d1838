export * from './forge-client.ts';
export * from './forge-errors.ts';
export { ciChangeOf, type CiChange } from './ci-environment.ts';
export { commitStatuses, reportComment, reportMarker, type ChangeReport } from './forge-report.ts';
export { reportToForge, type ForgeOutcome } from './report-to-forge.ts';
export type { Fetch } from './forge-request.ts';

import type { ForgeClient, ForgeTarget } from './forge-client.ts';
import type { Fetch } from './forge-request.ts';
import { githubClient } from './github-client.ts';
import { gitlabClient } from './gitlab-client.ts';

/** The client for a target's forge. */
export function forgeClient(target: ForgeTarget, fetchFn: Fetch = fetch): ForgeClient {
  return target.forge === 'gitlab' ? gitlabClient(target, fetchFn) : githubClient(target, fetchFn);
}
