import { readFile } from 'node:fs/promises';
import { parseLimit, parseLocationList, type Device, type PageAuth } from '@perfwatch/common';
import { describeAuth } from '../projects/project-auth.ts';
import { adminCommand, type AdminValues } from './admin-command.ts';
import { AdminError } from './admin.ts';

export const addProject = adminCommand({
  synopsis:
    'NAME URL [--locations a,b] [--default-location a] [--runs N] [--schedule CRON] [--devices a,b] [--no-crux]',
  summary: [
    '--devices: those an update naming none measures (default mobile,desktop);',
    '--no-crux: no CrUX field data',
  ],
  args: 2,
  run: async ({ admin, args, values, out }) => {
    const project = await admin.addProject(args[0]!, args[1]!, {
      locations: values.locations ? parseLocationList(values.locations) : undefined,
      defaultLocation: values['default-location'] ? parseLocationList(values['default-location'])[0] : undefined,
      runs: values.runs === undefined ? undefined : Number(values.runs),
      schedule: values.schedule ?? null,
      devices: values.devices === undefined ? undefined : deviceList(values.devices),
      crux: values['no-crux'] ? false : undefined,
    });
    out.write(
      values.json
        ? `${JSON.stringify(project)}\n`
        : `project ${project.url} added for ${args[0]}: locations ${project.locations.join(', ')}, ${project.runs} run(s)\n`,
    );
  },
});

/** `--devices mobile,desktop` as the rules take it (which refuse an unknown one by name). */
const deviceList = (text: string) => text.split(',').map((device) => device.trim()) as Device[];

export const removeProject = adminCommand({
  synopsis: 'NAME URL',
  summary: ['remove a project with all its snapshots'],
  args: 2,
  run: async ({ admin, args, out }) => {
    await admin.removeProject(args[0]!, args[1]!);
    out.write(`project ${args[1]} of ${args[0]} removed with its snapshots\n`);
  },
});

export const setBudgets = adminCommand({
  synopsis: 'NAME URL [--budget KEY=N]... [--max-regression KEY=N]...',
  summary: [
    'replace the budgets every snapshot of the project is checked against',
    '(none given: the project has no budgets); keys as perfwatch update --ci;',
    "a flow's step by <step>.<key> (--budget 'add to cart.inp=200'; inp only per step)",
  ],
  args: 2,
  run: async ({ admin, args, values, out }) => {
    const limits = (texts: string[]) => Object.fromEntries(texts.map((text) => parseLimit(text)));
    const project = await admin.setBudgets(args[0]!, args[1]!, {
      budgets: limits(values.budget),
      maxRegression: limits(values['max-regression']),
    });
    const shown = [
      ...Object.entries(project.budgets.budgets).map(([k, v]) => `${k}=${v}`),
      ...Object.entries(project.budgets.maxRegression).map(([k, v]) => `regression ${k}=${v}`),
    ];
    out.write(
      values.json
        ? `${JSON.stringify({ url: project.url, ...project.budgets })}\n`
        : `budgets of ${project.url}: ${shown.length > 0 ? shown.join(', ') : 'none'}\n`,
    );
  },
});

export const setAuth = adminCommand({
  synopsis: "NAME URL [--auth-file FILE] [--cookie NAME=VALUE]... [--header 'Name: value']... [--login-script FILE]",
  summary: [
    'credentials for a page behind a login, sealed with PERFWATCH_SECRETS_KEY;',
    "cookies and headers go to the project's origin only (a file keeps them",
    'out of the shell\'s history: {"cookies":[…],"headers":{…},"login":[…]})',
  ],
  args: 2,
  run: async ({ admin, args, values, out }) => {
    const auth = await authOf(values);
    const project = await admin.setAuth(args[0]!, args[1]!, auth);
    out.write(`credentials of ${project.url} stored, sealed: ${describeAuth(auth)}\n`);
  },
});

export const clearAuth = adminCommand({
  synopsis: 'NAME URL',
  summary: ["forget a project's credentials"],
  args: 2,
  run: async ({ admin, args, out }) => {
    await admin.clearAuth(args[0]!, args[1]!);
    out.write(`credentials of ${args[1]} forgotten\n`);
  },
});

async function readJson(file: string, what: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (error) {
    throw new AdminError(`${what} ${file}: ${(error as Error).message}`);
  }
}

/** The credentials `set-auth` was given: a file's, then the cookies, headers and login script named on the command line. */
async function authOf(values: AdminValues): Promise<PageAuth> {
  const fromFile = values['auth-file']
    ? ((await readJson(values['auth-file'], '--auth-file')) as {
        cookies?: unknown[];
        headers?: Record<string, unknown>;
        login?: unknown[];
      })
    : {};
  const cookies = [
    ...(fromFile.cookies ?? []),
    ...values.cookie.map((text) => {
      const at = text.indexOf('=');
      if (at < 1) throw new AdminError('--cookie is NAME=VALUE');
      return { name: text.slice(0, at), value: text.slice(at + 1) };
    }),
  ];
  const headers = {
    ...(fromFile.headers ?? {}),
    ...Object.fromEntries(
      values.header.map((text) => {
        const at = text.indexOf(':');
        if (at < 1) throw new AdminError("--header is 'Name: value'");
        return [text.slice(0, at).trim(), text.slice(at + 1).trim()];
      }),
    ),
  };
  const login = values['login-script'] ? await readJson(values['login-script'], '--login-script') : fromFile.login;
  return {
    ...(cookies.length > 0 ? { cookies } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(login !== undefined ? { login } : {}),
  } as PageAuth;
}
