import { createReadStream } from 'node:fs';
import { flowSchema, type Flow } from '@perfwatch/common';
import type { PagesSource } from './site-pages-input.ts';
import { readBounded } from './site-pages-input.ts';

/** A flow file that is not a flow: a usage error (exit 2), named by the step it is about. */
export class FlowFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlowFileError';
  }
}

/**
 * The flow of `--file FILE` (or `-`, standard input), checked here as the API checks it, so a
 * wrong step is named before anything is sent. The file is the flow (`{"steps": […]}`) or what
 * `perfwatch flow URL --json` prints (`{"url": …, "flow": {"steps": […]}}`), so one project's
 * flow can be copied to another.
 */
export async function readFlowFile(name: string, { stdin }: PagesSource): Promise<Flow> {
  const source = name === '-' ? 'standard input' : name;
  let given: unknown;
  try {
    given = JSON.parse(await readBounded(name === '-' ? stdin() : createReadStream(name)));
  } catch (error) {
    throw new FlowFileError(`--file ${source}: ${(error as Error).message}`);
  }
  const printed = given !== null && typeof given === 'object' && !('steps' in given) && 'flow' in given;
  const parsed = flowSchema.safeParse(printed ? (given as { flow: unknown }).flow : given);
  if (!parsed.success)
    throw new FlowFileError(
      `--file ${source} is not a flow (docs/flows.md):\n${parsed.error.issues
        .map((i) => `  ${i.path.length > 0 ? `${i.path.join('.')}: ` : ''}${i.message}`)
        .join('\n')}`,
    );
  return parsed.data;
}
