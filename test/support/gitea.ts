import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { z } from 'zod';
import { freePort } from './local-servers.ts';
import { measuredWait } from './measured-wait.ts';

/**
 * A real Gitea on loopback, from the API-only build `scripts/setup.sh` keeps in .tools/gitea (the
 * binary beside the options/ and templates/ it reads from disk), with SQLite, an app.ini of its
 * own and an admin user with a token: the forge the reports to a pull request are tested against.
 * Each test file starts its own and stops it by its pid.
 */

const run = promisify(execFile);
const DEFAULT_HOME = join(dirname(fileURLToPath(import.meta.url)), '../../.tools/gitea');
/** What the tests do as the user: create repositories (write:user), commit and set statuses, comment. */
const TOKEN_SCOPES = ['write:repository', 'write:issue', 'write:user'];

interface FileCommit {
  /** The branch the commit is made on, or that `newBranch` starts from. */
  branch: string;
  newBranch?: string;
  path: string;
  content: string;
  message: string;
}

export const commitStatusSchema = z.object({
  id: z.number(),
  // Gitea answers `status` for what a request sets as `state`.
  status: z.enum(['pending', 'success', 'error', 'failure', 'warning']),
  context: z.string(),
  description: z.string(),
  target_url: z.string(),
});
type CommitStatus = z.infer<typeof commitStatusSchema>;

export const issueCommentSchema = z.object({
  id: z.number(),
  body: z.string(),
  user: z.object({ login: z.string() }),
  created_at: z.string(),
  updated_at: z.string(),
});
type IssueComment = z.infer<typeof issueCommentSchema>;

export interface Gitea {
  /** The web root, e.g. http://127.0.0.1:20123/ */
  url: string;
  /** The REST root, e.g. http://127.0.0.1:20123/api/v1 */
  apiUrl: string;
  /** An access token of `username`'s with TOKEN_SCOPES. */
  token: string;
  username: string;
  /** From spawn to the first answer of /api/v1/version, in ms: what waits here are derived from. */
  startupMs: number;
  /** How long one API call may take on this machine now (a fetch past it is aborted). */
  requestTimeoutMs: number;
  /** Gitea's own log, for a failure's message. */
  logFile: string;
  stop(): Promise<void>;
  /** A REST call as the user: `path` below apiUrl, the answer parsed by `schema` (no body: z.unknown()). */
  api<T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T>;
  createRepository(name: string): Promise<{ fullName: string; cloneUrl: string }>;
  /** Creates or replaces one file; the new commit's sha. */
  commitFile(repo: string, file: FileCommit): Promise<string>;
  openPullRequest(repo: string, pull: { head: string; base: string; title: string; body?: string }): Promise<number>;
  statuses(repo: string, sha: string): Promise<CommitStatus[]>;
  /** The pull request's (or issue's) comments, oldest first. */
  comments(repo: string, number: number): Promise<IssueComment[]>;
  addWebhook(repo: string, hook: { url: string; secret: string; events: string[] }): Promise<number>;
}

export interface GiteaOptions {
  /** The directory holding gitea, options/ and templates/ (default: .tools/gitea). */
  home?: string;
  /** How long to wait for the first answer, before anything was measured. */
  startTimeoutMs?: number;
}

export async function startGitea({ home = DEFAULT_HOME, startTimeoutMs = 45_000 }: GiteaOptions = {}): Promise<Gitea> {
  const binary = join(home, 'gitea');
  await access(binary, constants.X_OK).catch(() => {
    throw new Error(`no Gitea at ${binary}: run scripts/setup.sh, which builds it`);
  });
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-gitea-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const config = join(dir, 'app.ini');
  await writeFile(config, giteaConfig({ home, dir, port }));
  const logFile = join(dir, 'log', 'gitea.log');
  const started = performance.now();
  const child = await spawnGitea(binary, config, dir);
  const stop = async () => {
    await stopProcess(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitForVersion(`${url}api/v1/version`, child, startTimeoutMs, logFile);
    const startupMs = performance.now() - started;
    const requestTimeoutMs = measuredWait(startupMs, 1, { slack: 10, floorMs: 15_000 });
    const username = 'perfwatch';
    const password = randomBytes(12).toString('hex');
    await run(binary, [
      ...['admin', 'user', 'create', '--config', config, '--work-path', dir],
      ...['--username', username, '--password', password, '--email', `${username}@example.test`],
      ...['--admin', '--must-change-password=false'],
    ]);
    const token = await createToken(`${url}api/v1`, username, password, requestTimeoutMs);
    const api = giteaApi(`${url}api/v1`, token, requestTimeoutMs);
    const calls = repositoryCalls(api, username);
    return { url, apiUrl: `${url}api/v1`, token, username, startupMs, requestTimeoutMs, logFile, stop, api, ...calls };
  } catch (error) {
    const log = await readFile(logFile, 'utf8').catch(() => '(no log)');
    await stop();
    throw new Error(
      `Gitea at ${binary} did not start (run scripts/setup.sh): ${(error as Error).message}\n${log.slice(-2000)}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * Everything in the temp dir but the code: the static root is the cached build's directory
 * (options/, templates/). Webhooks may go to loopback, where the tests' receivers listen, and
 * give up after 3 s as a slow receiver would make them.
 */
function giteaConfig({ home, dir, port }: { home: string; dir: string; port: number }): string {
  const sections: Record<string, Record<string, string | number | boolean>> = {
    '': {
      APP_NAME: 'perfwatch test forge',
      RUN_MODE: 'prod',
      RUN_USER: userInfo().username,
      WORK_PATH: dir,
      // Gitea refuses root unless told; containers and CI runners are often root.
      ...(process.getuid?.() === 0 ? { I_AM_BEING_UNSAFE_RUNNING_AS_ROOT: true } : {}),
    },
    server: {
      PROTOCOL: 'http',
      HTTP_ADDR: '127.0.0.1',
      HTTP_PORT: port,
      ROOT_URL: `http://127.0.0.1:${port}/`,
      LOCAL_ROOT_URL: `http://127.0.0.1:${port}/`,
      STATIC_ROOT_PATH: home,
      APP_DATA_PATH: join(dir, 'data'),
      OFFLINE_MODE: true,
      DISABLE_SSH: true,
      START_SSH_SERVER: false,
      LFS_START_SERVER: false,
    },
    database: { DB_TYPE: 'sqlite3', PATH: join(dir, 'data', 'gitea.db'), SQLITE_JOURNAL_MODE: 'WAL' },
    security: {
      INSTALL_LOCK: true,
      // Any long random strings: only this server reads them.
      SECRET_KEY: randomBytes(32).toString('hex'),
      INTERNAL_TOKEN: randomBytes(32).toString('hex'),
    },
    repository: { ROOT: join(dir, 'repositories'), DEFAULT_BRANCH: 'main' },
    webhook: { ALLOWED_HOST_LIST: 'loopback', DELIVER_TIMEOUT: 3 },
    log: { MODE: 'file', LEVEL: 'Info', ROOT_PATH: join(dir, 'log') },
    ...QUIET,
  };
  return Object.entries(sections)
    .map(([name, keys]) =>
      [...(name ? [`[${name}]`] : []), ...Object.entries(keys).map(([key, value]) => `${key} = ${value}`)].join('\n'),
    )
    .join('\n\n');
}

/**
 * Queues in memory, and no registration, mail, indexer, cron, OAuth2, actions or packages:
 * nothing the API tests need, each a cost at start-up or a file in the temp dir.
 */
const QUIET: Record<string, Record<string, string | boolean>> = {
  service: { DISABLE_REGISTRATION: true, ENABLE_NOTIFY_MAIL: false },
  mailer: { ENABLED: false },
  queue: { TYPE: 'channel' },
  indexer: { ISSUE_INDEXER_TYPE: 'db', REPO_INDEXER_ENABLED: false },
  session: { PROVIDER: 'memory' },
  cache: { ADAPTER: 'memory' },
  oauth2: { ENABLED: false },
  actions: { ENABLED: false },
  packages: { ENABLED: false },
  cron: { ENABLED: false },
  'cron.update_checker': { ENABLED: false },
};

async function spawnGitea(binary: string, config: string, dir: string): Promise<ChildProcess> {
  // Its stdout and stderr (the few lines before its own log file opens) go straight to a file.
  const output = await open(join(dir, 'gitea.out'), 'a');
  const child = spawn(binary, ['web', '--config', config, '--work-path', dir], {
    stdio: ['ignore', output.fd, output.fd],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (error) => reject(new Error(`could not start ${binary}: ${error.message}`)));
    });
  } finally {
    await output.close();
  }
  return child;
}

async function waitForVersion(url: string, child: ChildProcess, timeoutMs: number, logFile: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`it exited with code ${child.exitCode}; its log is ${logFile}`);
    const answered = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (answered) return;
    await sleep(50);
  }
  throw new Error(`no answer from ${url} within ${timeoutMs} ms`);
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  // Gitea waits for open connections on SIGTERM; a test's server has none worth waiting for.
  const stopped = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
  if (!stopped) child.kill('SIGKILL');
  await exited;
}

async function createToken(apiUrl: string, username: string, password: string, timeoutMs: number): Promise<string> {
  const response = await fetch(`${apiUrl}/users/${username}/tokens`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ name: `perfwatch-tests-${randomBytes(4).toString('hex')}`, scopes: TOKEN_SCOPES }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) throw new Error(`creating a token answered ${response.status}: ${await response.text()}`);
  return z.object({ sha1: z.string().min(1) }).parse(await response.json()).sha1;
}

/** An answer of Gitea's other than 2xx. */
class GiteaApiError extends Error {
  override name = 'GiteaApiError';
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

type GiteaApi = Gitea['api'];

function giteaApi(apiUrl: string, token: string, requestTimeoutMs: number): GiteaApi {
  return async (method, path, schema, body) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: {
        authorization: `token ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(requestTimeoutMs),
    });
    const text = await response.text();
    if (!response.ok)
      throw new GiteaApiError(response.status, `Gitea: ${method} ${path} answered ${response.status}: ${text}`);
    return schema.parse(text === '' ? undefined : JSON.parse(text));
  };
}

const contentsSchema = z.object({ commit: z.object({ sha: z.string() }) });

function repositoryCalls(
  api: GiteaApi,
  username: string,
): Pick<Gitea, 'createRepository' | 'commitFile' | 'openPullRequest' | 'statuses' | 'comments' | 'addWebhook'> {
  const repoPath = (repo: string) => `/repos/${username}/${repo}`;
  return {
    async createRepository(name) {
      const created = await api('POST', '/user/repos', z.object({ full_name: z.string(), clone_url: z.string() }), {
        name,
        default_branch: 'main',
        auto_init: false,
        private: false,
      });
      return { fullName: created.full_name, cloneUrl: created.clone_url };
    },
    async commitFile(repo, { branch, newBranch, path, content, message }) {
      const at = `${repoPath(repo)}/contents/${path.split('/').map(encodeURIComponent).join('/')}`;
      // Replacing a file names the blob it replaces; a new one (or a first commit) has none.
      const existing = await api('GET', `${at}?ref=${encodeURIComponent(branch)}`, z.object({ sha: z.string() })).catch(
        (error: unknown) =>
          error instanceof GiteaApiError && error.status === 404 ? undefined : Promise.reject(error),
      );
      const body = {
        branch,
        ...(newBranch ? { new_branch: newBranch } : {}),
        content: Buffer.from(content).toString('base64'),
        message,
        ...(existing ? { sha: existing.sha } : {}),
      };
      return (await api(existing ? 'PUT' : 'POST', at, contentsSchema, body)).commit.sha;
    },
    async openPullRequest(repo, pull) {
      return (await api('POST', `${repoPath(repo)}/pulls`, z.object({ number: z.number() }), pull)).number;
    },
    statuses: (repo, sha) => api('GET', `${repoPath(repo)}/commits/${sha}/statuses`, z.array(commitStatusSchema)),
    comments: (repo, number) => api('GET', `${repoPath(repo)}/issues/${number}/comments`, z.array(issueCommentSchema)),
    async addWebhook(repo, { url, secret, events }) {
      const hook = { type: 'gitea', active: true, events, config: { url, content_type: 'json', secret } };
      return (await api('POST', `${repoPath(repo)}/hooks`, z.object({ id: z.number() }), hook)).id;
    },
  };
}
