import { readFile } from 'node:fs/promises';
import type { Flow } from '@perfwatch/common';
import { adminCommand } from './admin-command.ts';
import { AdminError } from './admin-error.ts';

export const setFlow = adminCommand({
  synopsis: 'NAME URL --file FILE | --clear',
  summary: [
    'replace the project\'s user flow with FILE\'s ({"steps":[…]}, docs/flows.md), or --clear it',
    '(its updates measure a navigation of URL again); budgets per step: set-budgets',
    "--budget 'add to cart.inp=200'",
  ],
  args: 2,
  run: async ({ admin, args, values, out }) => {
    const [name, url] = [args[0]!, args[1]!];
    if (values.clear === (values.file !== undefined)) throw new AdminError('set-flow takes --file FILE or --clear');
    if (values.clear) {
      const { project, previous } = await admin.setFlow(name, url, null);
      out.write(
        previous
          ? `flow of ${project.url} removed: its updates measure a navigation of it again\n`
          : `${project.url} had no flow\n`,
      );
      return;
    }
    const { project } = await admin.setFlow(name, url, await readFlowFile(values.file!));
    out.write(
      values.json
        ? `${JSON.stringify({ url: project.url, flow: project.flow })}\n`
        : `flow of ${project.url} set: ${flowSummary(project.flow!)}\n`,
    );
  },
});

/** `3 steps: navigate "product", timespan "add to cart", snapshot "cart"`. */
const flowSummary = ({ steps }: Flow) =>
  `${steps.length} step(s): ${steps.map((step) => `${step.kind} "${step.name}"`).join(', ')}`;

async function readFlowFile(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (error) {
    throw new AdminError(`--file ${file}: ${(error as Error).message}`);
  }
}
