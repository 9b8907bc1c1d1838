import { z } from 'zod';
import { programSettings, settingGroup } from '@perfwatch/common';

/** The gateway the command-line client calls, and as whom. */
export const clientSettings = settingGroup('Command-line client', {
  PERFWATCH_SERVER: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .default('http://127.0.0.1:8080')
    .describe('The gateway `perfwatch update`, `audit`, `compare` and `overview` call (`--server` wins).'),
  PERFWATCH_TOKEN: z.string().min(1).optional().describe('The API token they send (`--token` wins).'),
});

/** What `perfwatch update|audit|compare|overview` read. */
export const clientProgramSettings = programSettings({
  program: 'perfwatch update, audit, compare, overview',
  schema: z.object(clientSettings.settings),
});
