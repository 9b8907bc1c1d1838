import { adminCommand } from './admin-command.ts';
import { AdminError } from './admin.ts';

export const addWebhook = adminCommand({
  synopsis: 'NAME TARGET_URL [--project URL] [--format json|slack]',
  summary: [
    "post NAME's budget and update events to TARGET_URL; prints the",
    'signing secret (shown once) as the last word',
  ],
  args: 2,
  run: async ({ admin, args, values, out }) => {
    const format = values.format ?? 'json';
    if (format !== 'json' && format !== 'slack') throw new AdminError(`--format is json or slack, not ${format}`);
    const hook = await admin.addWebhook(args[0]!, args[1]!, {
      ...(values.project ? { project: values.project } : {}),
      format,
    });
    // The secret last, alone after the final space: scripts take the last word.
    out.write(
      `webhook ${hook.id} of ${args[0]} posts ${hook.projectUrl ? `${hook.projectUrl}'s` : "all projects'"} events (${format}) to ${hook.targetUrl}\nsigning secret (shown once, keep it secret): ${hook.secret}\n`,
    );
  },
});

export const removeWebhook = adminCommand({
  synopsis: 'NAME ID',
  summary: ['remove a webhook with its deliveries'],
  args: 2,
  run: async ({ admin, args, out }) => {
    await admin.removeWebhook(args[0]!, args[1]!);
    out.write(`webhook ${args[1]} of ${args[0]} removed\n`);
  },
});

export const webhookDeliveries = adminCommand({
  synopsis: 'NAME',
  summary: ["NAME's webhooks and their newest deliveries, with their status"],
  args: 1,
  run: async ({ admin, args, values, out }) => {
    const hooks = await admin.webhooks(args[0]!);
    if (values.json) return void out.write(`${JSON.stringify(hooks)}\n`);
    if (hooks.length === 0) out.write(`${args[0]} has no webhooks\n`);
    for (const hook of hooks) {
      out.write(`${hook.id}  ${hook.targetUrl}  [${hook.format}${hook.project ? `, ${hook.project}` : ''}]\n`);
      if (hook.deliveries.length === 0) out.write('  no deliveries\n');
      for (const d of hook.deliveries)
        out.write(
          `  ${d.createdAt}  ${d.event.padEnd(16)} ${d.status.padEnd(9)} attempts=${d.attempts}${d.nextAttemptAt ? ` next=${d.nextAttemptAt}` : ''}${d.lastError ? `  last error: ${d.lastError}` : ''}  id=${d.id}\n`,
        );
    }
  },
});
