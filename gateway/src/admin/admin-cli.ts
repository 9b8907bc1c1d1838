import {
  BudgetSpecError,
  commandListing,
  ConfigError,
  EXIT,
  LocationListError,
  parseEnv,
  runCommandLine,
  type CliIo,
  type Env,
  type ExitCode,
  type Program,
} from '@perfwatch/common';
import { createWebhookTargets } from '../alerts/webhook-targets.ts';
import { createSecretBox, SecretKeyError } from '../accounts/secret-box.ts';
import { storeFromEnv } from '../store/open-store.ts';
import { adminSettings } from './admin-config.ts';
import type { AdminContext } from './admin-command.ts';
import { AdminError, createAdmin } from './admin.ts';
import { setFlow } from './flow-commands.ts';
import { addProject, clearAuth, removeProject, setAuth, setBudgets } from './project-commands.ts';
import { recomputeKpis, rotateSecretsKey } from './store-commands.ts';
import { addMember, addOrg, listMembers, listTokens, removeMember } from './team-commands.ts';
import { createToken, createUser, list, revokeToken } from './token-commands.ts';
import { addWebhook, removeWebhook, webhookDeliveries } from './webhook-commands.ts';

/** `perfwatch admin`'s commands, in the order its usage lists them. */
const ADMIN_COMMANDS = {
  'create-user': createUser,
  'create-token': createToken,
  'revoke-token': revokeToken,
  'list-tokens': listTokens,
  'add-project': addProject,
  'remove-project': removeProject,
  'set-budgets': setBudgets,
  'set-flow': setFlow,
  'add-webhook': addWebhook,
  'remove-webhook': removeWebhook,
  'webhook-deliveries': webhookDeliveries,
  list,
  'add-org': addOrg,
  'add-member': addMember,
  'remove-member': removeMember,
  'list-members': listMembers,
  'set-auth': setAuth,
  'clear-auth': clearAuth,
  'rotate-secrets-key': rotateSecretsKey,
  'recompute-kpis': recomputeKpis,
};

const USAGE = [
  'usage: perfwatch admin <command>',
  ...commandListing(ADMIN_COMMANDS),
  'environment: MONGODB_URI, MONGODB_DB; PERFWATCH_ALLOW_TARGETS (the private addresses webhooks, plain-http ones',
  '             among them, and set-flow navigate steps may reach);',
  "             WEBHOOK_MAX_PER_USER (the gateway's); PERFWATCH_SECRETS_KEY, PERFWATCH_SECRETS_KEY_PREVIOUS (the gateway's,",
  '             for credentials and webhook secrets); without MONGODB_URI, the embedded store of perfwatch start',
  '             (PERFWATCH_DATA_DIR/perfwatch.sqlite, default ./data)',
].join('\n');

/** Refusals of the store and of the values given exit 1; a wrong setting is a usage error (2). */
function adminExitFor(error: unknown): ExitCode | undefined {
  if (error instanceof ConfigError) return EXIT.usage;
  const refused = [AdminError, BudgetSpecError, SecretKeyError, LocationListError];
  return refused.some((kind) => error instanceof kind) ? EXIT.failed : undefined;
}

function adminProgram(io: CliIo): Program<AdminContext> {
  return {
    path: ['admin'],
    commands: ADMIN_COMMANDS,
    usage: USAGE,
    label: () => 'perfwatch admin',
    exitFor: adminExitFor,
    async open(env) {
      const config = parseEnv(adminSettings.schema, env);
      // The store perfwatch start uses (the embedded one may be open in a running start too:
      // SQLite lets a second process write between its transactions).
      const { store } = storeFromEnv(config);
      try {
        await store.init();
      } catch (error) {
        await store.close();
        throw error;
      }
      const admin = createAdmin(store, {
        targetGuard: createWebhookTargets(config.PERFWATCH_ALLOW_TARGETS),
        secrets: createSecretBox({
          key: config.PERFWATCH_SECRETS_KEY,
          previous: config.PERFWATCH_SECRETS_KEY_PREVIOUS,
        }),
        maxWebhooksPerUser: config.WEBHOOK_MAX_PER_USER,
      });
      return { context: { admin, store, out: io.out }, close: () => store.close() };
    },
  };
}

/** `perfwatch admin …` (`argv` the words after `perfwatch`, `admin` first). Returns the exit code. */
export function main(
  argv: readonly string[],
  env: Env,
  io: CliIo = { out: process.stdout, err: process.stderr },
): Promise<ExitCode> {
  return runCommandLine(adminProgram(io), argv, env, io);
}
