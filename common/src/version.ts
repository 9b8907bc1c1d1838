import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** The perfwatch version this code belongs to (one version for all workspaces). */
export const PERFWATCH_VERSION: string = z
  .object({ version: z.string() })
  .parse(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))).version;
