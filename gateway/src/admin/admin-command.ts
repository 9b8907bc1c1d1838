import type { ParseArgsOptionsConfig } from 'node:util';
import { defineCommand, EXIT, type Command, type OptionValues } from '@perfwatch/common';
import type { recomputeKpis } from './recompute-kpis.ts';
import type { Admin } from './admin.ts';

/** The options of `perfwatch admin`: one set, taken by every command (each reads those it uses). */
const ADMIN_OPTIONS = {
  locations: { type: 'string' },
  'default-location': { type: 'string' },
  runs: { type: 'string' },
  schedule: { type: 'string' },
  devices: { type: 'string' },
  'no-crux': { type: 'boolean', default: false },
  budget: { type: 'string', multiple: true, default: [] },
  'max-regression': { type: 'string', multiple: true, default: [] },
  project: { type: 'string' },
  format: { type: 'string' },
  'auth-file': { type: 'string' },
  cookie: { type: 'string', multiple: true, default: [] },
  header: { type: 'string', multiple: true, default: [] },
  'login-script': { type: 'string' },
  file: { type: 'string' },
  clear: { type: 'boolean', default: false },
  expires: { type: 'string' },
  org: { type: 'string' },
  scope: { type: 'string' },
  projects: { type: 'string' },
  label: { type: 'string' },
  role: { type: 'string' },
  json: { type: 'boolean', default: false },
} satisfies ParseArgsOptionsConfig;

export type AdminValues = OptionValues<typeof ADMIN_OPTIONS>;

/** What an admin command works with: the admin operations, their store, where results go. */
export interface AdminContext {
  admin: Admin;
  /** The store, for what commands do beyond the admin operations: rebuilding KPI records. */
  store: Parameters<typeof recomputeKpis>[0];
  out: { write(text: string): unknown };
}

/** An admin command: its place in the usage, its arguments, what it does (done: exit 0; refused: it throws). */
export function adminCommand(spec: {
  synopsis: string;
  summary?: readonly string[];
  args: number;
  run(call: { args: string[]; values: AdminValues } & AdminContext): Promise<void>;
}): Command<AdminContext> {
  return defineCommand({
    synopsis: [spec.synopsis],
    summary: spec.summary ?? [],
    options: ADMIN_OPTIONS,
    args: { count: spec.args },
    run: async ({ args, values, context }) => {
      await spec.run({ args, values, ...context });
      return EXIT.ok;
    },
  });
}
