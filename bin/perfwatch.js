#!/usr/bin/env node
// perfwatch's one command-line entry. perfwatch runs its TypeScript sources directly on
// Node 24 (type stripping), so under an older Node this re-runs itself with the Node 24 that
// the project installs as a devDependency.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  const node24 = join(root, 'node_modules/node/bin/node');
  if (!existsSync(node24)) {
    process.stderr.write(`perfwatch needs Node 24 (this is ${process.version}); run npm ci in ${root} first.\n`);
    process.exit(1);
  }
  const { status, signal } = spawnSync(node24, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(status ?? (signal ? 128 : 1));
}

const USAGE = `usage: perfwatch <command>
  start     gateway + a local agent + local NATS and database, with a demo project
  gateway   the HTTP gateway (NATS_URL, MONGODB_URI, PORT, ...)
  agent     a location agent (NATS_URL, PERFWATCH_LOCATION, CHROME_PATH, ...)
  admin     users, tokens and projects (perfwatch admin --help)
  update    run an update of a project, optionally checked against budgets (perfwatch update --help)
  audit     read a stored snapshot
  compare   two snapshots side by side: differences, and whether each is beyond noise
  overview  KPI records over a date range`;

const [command, ...args] = process.argv.slice(2);
const programs = {
  start: () => import('../local/src/main.ts'),
  gateway: () => import('../gateway/src/main.ts'),
  agent: () => import('../agent/src/main.ts'),
  admin: () => import('../gateway/src/admin/admin-cli.ts'),
  update: () => import('../client/src/client-cli.ts'),
  audit: () => import('../client/src/client-cli.ts'),
  compare: () => import('../client/src/client-cli.ts'),
  overview: () => import('../client/src/client-cli.ts'),
};
const clientVerbs = new Set(['update', 'audit', 'compare', 'overview']);

if (!command || command === '--help' || command === '-h' || !(command in programs)) {
  (command && command !== '--help' && command !== '-h' ? process.stderr : process.stdout).write(`${USAGE}\n`);
  process.exit(command && command !== '--help' && command !== '-h' ? 2 : 0);
}

try {
  const program = await programs[command]();
  const code =
    command === 'admin'
      ? await program.main(args, process.env)
      : clientVerbs.has(command)
        ? await program.main(command, args, process.env)
        : await program.main(process.env);
  process.exitCode = typeof code === 'number' ? code : 0;
} catch (error) {
  // Configuration and start-up errors say what to fix; anything else is a crash with its stack.
  process.stderr.write(
    `perfwatch ${command}: ${error?.name === 'ConfigError' || error?.name === 'StartupError' ? error.message : (error?.stack ?? error)}\n`,
  );
  process.exitCode = 1;
}
