import { flowSchema, type Flow, type TargetGuard } from '@perfwatch/common';
import { forbiddenFlowTargets } from '../projects/flow-targets.ts';
import { AdminError } from './admin-error.ts';

/**
 * A flow as the API's PUT takes it: its steps hold (flowSchema; each refusal names its step)
 * and every URL it navigates to is one the address rules (PERFWATCH_ALLOW_TARGETS) allow.
 */
export async function checkedFlow(guard: TargetGuard, given: unknown): Promise<Flow> {
  const parsed = flowSchema.safeParse(given);
  if (!parsed.success)
    throw new AdminError(
      parsed.error.issues.map((i) => `${i.path.length > 0 ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; '),
    );
  const refused = await forbiddenFlowTargets(guard, parsed.data);
  if (refused.length > 0)
    throw new AdminError(`the flow navigates to an address agents may not reach: ${refused.join('; ')}`);
  return parsed.data;
}
