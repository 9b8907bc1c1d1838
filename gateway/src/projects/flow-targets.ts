import { describeStep, flowNavigations, TargetRefused, type Flow, type TargetGuard } from '@perfwatch/common';

/**
 * The navigate steps of `flow` whose host the address rules (PERFWATCH_ALLOW_TARGETS) forbid,
 * each as a line naming its step (`steps.2.url: step 3 "checkout": …`): what the API and the
 * admin CLI refuse a flow for. A name that does not resolve here is let through (DNS may differ
 * where the agents are); the agent checks every navigation again before Chrome goes there.
 */
export async function forbiddenFlowTargets(guard: TargetGuard, flow: Flow): Promise<string[]> {
  const refused: string[] = [];
  for (const { index, step, url } of flowNavigations(flow)) {
    try {
      await guard.resolve(new URL(url).hostname);
    } catch (error) {
      if (!(error instanceof TargetRefused)) throw error;
      if (error.kind === 'forbidden')
        refused.push(`steps.${index}.url: ${describeStep(step, index)}: ${error.message}`);
    }
  }
  return refused;
}
