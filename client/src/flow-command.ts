import type { ParseArgsOptionsConfig } from 'node:util';
import { defineCommand, EXIT, UsageError, type FlowAction, type FlowView } from '@perfwatch/common';
import { COMMON_OPTIONS, type ClientContext } from './client-command.ts';
import { readFlowFile } from './flow-file.ts';

const FLOW_OPTIONS = {
  ...COMMON_OPTIONS,
  file: { type: 'string' },
  clear: { type: 'boolean', default: false },
} satisfies ParseArgsOptionsConfig;

export const flowCommand = defineCommand<ClientContext, typeof FLOW_OPTIONS>({
  synopsis: ['URL [--json]', 'URL --file FILE|- [--json]', 'URL --clear'],
  summary: [
    "a project's user flow (docs/flows.md): shown, replaced with FILE's (- standard input), or cleared",
    '(its updates measure a navigation of URL again)',
  ],
  options: FLOW_OPTIONS,
  args: { count: 1, refused: 'flow takes one project URL' },
  run: async ({ args: [url], values, context: { client, io } }) => {
    if (values.clear && values.file !== undefined) throw new UsageError('flow takes --file or --clear, not both');
    if (values.clear) {
      await client.removeFlow(url!);
      io.out.write(`flow of ${url} removed: its updates measure a navigation of it again\n`);
      return EXIT.ok;
    }
    const view =
      values.file === undefined
        ? await client.flow(url!)
        : await client.setFlow(url!, await readFlowFile(values.file, { stdin: () => io.stdin ?? process.stdin }));
    io.out.write(values.json ? `${JSON.stringify(view)}\n` : flowListing(view, values.file !== undefined));
    return EXIT.ok;
  },
});

/** The flow's steps, one a line with what each does (never a value it types: it may be a secret). */
function flowListing({ url, flow }: FlowView, set = false): string {
  if (!flow) return `${url} has no flow: its updates measure a navigation of it\n`;
  const lines = flow.steps.map((step, index) => {
    const head = `  ${index + 1}. ${step.kind} "${step.name}"`;
    if (step.kind === 'navigate') return `${head} ${step.url ?? "(the project's page)"}`;
    if (step.kind === 'snapshot') return head;
    return `${head}: ${step.actions.map(actionText).join(', ')}`;
  });
  return `flow of ${url}${set ? ' set' : ''}: ${flow.steps.length} step(s)\n${lines.join('\n')}\n`;
}

/** `click text "Add to cart"`, `press Enter #search`, `scroll y=800`, `waitFor #cart 5000 ms`. */
function actionText(action: FlowAction): string {
  const target =
    'selector' in action && action.selector !== undefined
      ? action.selector
      : 'text' in action && action.text !== undefined
        ? `text ${JSON.stringify(action.text)}`
        : '';
  const detail =
    action.action === 'press'
      ? action.key
      : action.action === 'scroll' && action.y !== undefined
        ? `y=${action.y}`
        : '';
  const wait = action.action === 'waitFor' && action.timeoutMs !== undefined ? `${action.timeoutMs} ms` : '';
  return [action.action, detail, target, wait].filter(Boolean).join(' ');
}
