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

/**
 * perfwatch's programs, one entry a command: what it is, and where its code is (loaded only when
 * run). Every program's `main(argv, env)` takes the words after `perfwatch` and the environment,
 * and returns its exit code (common/src/cli/exit-codes.ts); the servers run until stopped.
 */
const PROGRAMS = {
  start: {
    summary: 'gateway + a local agent + local NATS and database, with a demo project',
    load: () => import('../local/src/start-cli.ts'),
  },
  gateway: {
    summary: 'the HTTP gateway (NATS_URL, MONGODB_URI, PORT, ...)',
    load: () => import('../gateway/src/main.ts'),
  },
  agent: {
    summary: 'a location agent (NATS_URL, PERFWATCH_LOCATION, CHROME_PATH, ...)',
    load: () => import('../agent/src/main.ts'),
  },
  admin: {
    summary: 'users, tokens and projects (perfwatch admin --help)',
    load: () => import('../gateway/src/admin/admin-cli.ts'),
  },
  update: {
    summary: 'run an update of a project or a whole site, optionally a CI gate on budgets (perfwatch update --help)',
    load: () => import('../client/src/client-cli.ts'),
  },
  audit: { summary: 'read a stored snapshot', load: () => import('../client/src/client-cli.ts') },
  compare: {
    summary: 'two snapshots side by side: differences, and whether each is beyond noise',
    load: () => import('../client/src/client-cli.ts'),
  },
  overview: { summary: 'KPI records over a date range', load: () => import('../client/src/client-cli.ts') },
  flow: {
    summary: "a project's user flow: shown, set from a JSON file, or cleared (perfwatch flow --help)",
    load: () => import('../client/src/client-cli.ts'),
  },
};

const USAGE = [
  'usage: perfwatch <command>',
  ...Object.entries(PROGRAMS).map(([name, { summary }]) => `  ${name.padEnd(10)}${summary}`),
].join('\n');

// The exit codes every program uses (a file of plain constants, loaded alone).
const { EXIT } = await import('../common/src/cli/exit-codes.ts');
const argv = process.argv.slice(2);
const [command] = argv;
const asked = command === '--help' || command === '-h';
if (!command || asked || !Object.hasOwn(PROGRAMS, command)) {
  (asked ? process.stdout : process.stderr).write(`${USAGE}\n`);
  process.exit(asked ? EXIT.ok : EXIT.usage);
}

try {
  const code = await (await PROGRAMS[command].load()).main(argv, process.env);
  process.exitCode = typeof code === 'number' ? code : EXIT.ok;
} catch (error) {
  // A wrong setting (2) or a part that cannot start (1) says what to fix; anything else is a crash
  // with its stack.
  const known = error?.name === 'ConfigError' || error?.name === 'StartupError';
  process.stderr.write(`perfwatch ${command}: ${known ? error.message : (error?.stack ?? error)}\n`);
  process.exitCode = error?.name === 'ConfigError' ? EXIT.usage : EXIT.failed;
}
