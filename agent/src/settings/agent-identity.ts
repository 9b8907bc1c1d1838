import { z } from 'zod';
import { agentIdSchema, LOCATIONS, settingGroup } from '@perfwatch/common';

/** Who an agent is, and how it tells gateways it is there. */
export const agentIdentitySettings = settingGroup('Agent', {
  PERFWATCH_LOCATION: z
    .enum(LOCATIONS, { error: `must be one of ${LOCATIONS.join(', ')}` })
    .describe(`Required. The location whose jobs the agent takes: one of ${LOCATIONS.join(', ')}.`),
  PERFWATCH_AGENT_ID: agentIdSchema
    .optional()
    .describe(
      "The agent's name in its replies, announcements and logs (a re-test asks for another agent by it). " +
        "Unset: the host's name and the process id.",
    ),
  PERFWATCH_ANNOUNCE_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(5_000)
    .describe('How often the agent announces itself to gateways; three missed ones and it counts as gone.'),
});
