import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { isBrowserTeardownError } from './agent/src/browser-teardown-errors.ts';

/**
 * Suites that measure with real Chromium and judge by the machine's speed: the verdicts on
 * runs (a benchmark index off its baseline makes a run suspect) and the fair-use timings.
 */
const QUIET = ['test/e2e/suspect-runs.test.ts', 'test/e2e/fair-use.test.ts'];

const src = (path: string) => fileURLToPath(new URL(`./${path}`, import.meta.url));

// Packages resolve to their sources, so no test needs a build.
const alias = [
  { find: /^@perfwatch\/common$/, replacement: src('common/src/index.ts') },
  { find: /^@perfwatch\/client$/, replacement: src('client/src/index.ts') },
  { find: /^@perfwatch\/gateway$/, replacement: src('gateway/src/index.ts') },
  { find: /^@perfwatch\/agent$/, replacement: src('agent/src/index.ts') },
  { find: /^@perfwatch\/local$/, replacement: src('local/src/index.ts') },
];

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    // The runner suite kills Chrome mid-run on purpose; puppeteer then rejects commands nobody
    // awaits. Exactly those are ignored (the agent's main does the same); any other fails the run.
    onUnhandledError: (error) => !isBrowserTeardownError(error),
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['{common,client,gateway,agent,local}/src/**/*.test.ts'],
          environment: 'node',
          sequence: { groupOrder: 0 },
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/deploy/compose-stack.test.ts', ...QUIET],
          environment: 'node',
          // Real servers for every suite here: nats-server, FerretDB, the fixture site.
          globalSetup: ['./test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Two cores: Lighthouse suites must not share them with other heavy files.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        resolve: { alias },
        test: {
          // Suites whose outcome is the machine's speed, after the others and one file at a
          // time: a neighbour's Chrome slows their runs, which perfwatch then rightly doubts.
          name: 'quiet',
          include: QUIET,
          environment: 'node',
          globalSetup: ['./test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
      {
        resolve: { alias },
        test: {
          // On a real container engine, after the other suites (image builds and four Chromes in
          // containers would starve their Lighthouse runs): the shipped images and compose stack,
          // and suites of the integration project again, their servers started by testcontainers.
          name: 'containers',
          include: [
            'test/deploy/compose-stack.test.ts',
            'test/integration/mongo-store.test.ts',
            // Each slice's store contract, on MongoDB itself (and SQLite again, which costs a second).
            'test/store/*.contract.test.ts',
            'test/integration/update-over-nats.test.ts',
          ],
          // The artifact store is not the records' store: its contract (fs and SeaweedFS) runs once, in integration.
          exclude: ['test/store/artifacts.contract.test.ts'],
          environment: 'node',
          globalSetup: ['./test/support/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 1_800_000,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
