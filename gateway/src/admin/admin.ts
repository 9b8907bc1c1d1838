import {
  type Flow,
  normalizeProjectUrl,
  pageAuthSchema,
  type Budgets,
  type PageAuth,
  type TokenScope,
  type Webhook,
} from '@perfwatch/common';
import { gatewayDefaults } from '../config.ts';
import { readProjectAuth, sealProjectAuth } from '../projects/project-auth.ts';
import { projectSettings, ProjectSettingsError, type ProjectOptions } from '../projects/project-settings.ts';
import { createSecretBox, SecretKeyError, type SecretBox } from '../accounts/secret-box.ts';
import {
  DuplicateError,
  WebhookLimitReached,
  type ProjectRecord,
  type AccountsStore,
  type ForgeStore,
  type ProjectsStore,
  type WebhooksStore,
  type TokenRecord,
  type UserRecord,
} from '../store/store.ts';
import { issueToken } from '../accounts/tokens.ts';
import { addWebhook, listWebhookViews, WebhookRefused } from '../alerts/webhook-registry.ts';
import { openWebhookSecret, storedWebhookSecret, webhookSecretIsCurrent } from '../alerts/webhook-secrets.ts';
import { createWebhookTargets, type WebhookTargets } from '../alerts/webhook-targets.ts';
import { resealForgeLinks } from '../forge/reseal-links.ts';
import { ACCOUNT_NAME, type OrganisationRecord, type TeamsStore } from '../teams/store/teams-store.ts';
import { AdminError } from './admin-error.ts';
import { checkedFlow } from './checked-flow.ts';
import { TeamAdmin } from './team-admin.ts';
import { tokenGrant, type TokenGrantOptions } from './token-grant.ts';

/** Writes rotate-secrets-key lets come between its read and its write of one project before it gives up on it. */
const MAX_RESEAL_ATTEMPTS = 5;

export { AdminError };

/** How a token is issued: when it stops being accepted (null or absent: never), and what it acts as. */
export interface TokenOptions extends TokenGrantOptions {
  expiresAt?: Date | null;
}

/** A token just issued: shown once, with its user, expiry, organisation (by name), scope, ci projects and label. */
export interface IssuedTokenView {
  user: UserRecord;
  token: string;
  prefix: string;
  expiresAt: Date | null;
  org: string;
  /** Whether it is what a token made before organisations was: its user's own organisation's, admin, no label. */
  plain: boolean;
  scope: TokenScope;
  projects: string[] | null;
  label: string | null;
}

/** The admin operations behind `perfwatch admin …`; also used by `perfwatch start` and tests. */
/** What the admin commands read and write (repository links: resealed by rotate-secrets-key). */
type AdminStore = AccountsStore &
  TeamsStore &
  ProjectsStore &
  WebhooksStore &
  Pick<ForgeStore, 'findForgeLink' | 'replaceForgeLinkSecrets'>;

export function createAdmin(
  store: AdminStore,
  {
    targetGuard = createWebhookTargets(),
    secrets = createSecretBox({}),
    maxWebhooksPerUser = gatewayDefaults.WEBHOOK_MAX_PER_USER,
  }: { targetGuard?: WebhookTargets; secrets?: SecretBox; maxWebhooksPerUser?: number } = {},
): Admin {
  return new Admin(store, targetGuard, secrets, maxWebhooksPerUser);
}

/** The shared rules' refusal, as the admin CLI reports it. */
function adminChecked<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw error instanceof ProjectSettingsError ? new AdminError(error.message) : error;
  }
}

export class Admin {
  /** Organisations and their members. */
  readonly teams: TeamAdmin;
  readonly #store: AdminStore;
  readonly #targetGuard: WebhookTargets;
  readonly #secrets: SecretBox;
  readonly #maxWebhooksPerUser: number;

  constructor(store: AdminStore, targetGuard: WebhookTargets, secrets: SecretBox, maxWebhooksPerUser: number) {
    this.#store = store;
    this.teams = new TeamAdmin(store);
    this.#targetGuard = targetGuard;
    this.#secrets = secrets;
    this.#maxWebhooksPerUser = maxWebhooksPerUser;
  }

  async #userNamed(name: string): Promise<UserRecord> {
    const user = await this.#store.findUserByName(name);
    if (!user) throw new AdminError(`no user named ${JSON.stringify(name)}`);
    return user;
  }

  /**
   * The organisation named `name`, which owns projects and webhooks: a user's own has the
   * user's name, so the commands that name a user (add-project NAME) take any organisation too.
   */
  async #ownerNamed(name: string): Promise<OrganisationRecord> {
    const owner = await this.#store.findOrganisationByName(name);
    if (!owner) throw new AdminError(`no user or organisation named ${JSON.stringify(name)}`);
    return owner;
  }

  async #projectOf(name: string, url: string): Promise<ProjectRecord> {
    const user = await this.#ownerNamed(name);
    const normalized = normalizeProjectUrl(url) ?? url;
    const project = await this.#store.findProject(user.id, normalized);
    if (!project) throw new AdminError(`${name} has no project at ${normalized}`);
    return project;
  }

  async createUser(name: string, options: TokenOptions = {}): Promise<IssuedTokenView> {
    if (!ACCOUNT_NAME.test(name)) throw new AdminError('a user name has 1–100 letters, digits or . _ @ -');
    try {
      await this.#store.createUser(name);
    } catch (error) {
      if (!(error instanceof DuplicateError)) throw error;
      // Their own organisation has their name: one of that name makes it taken too.
      if (!(await this.#store.findUserByName(name))) throw new AdminError(error.message);
      throw new AdminError(`user ${JSON.stringify(name)} exists; use create-token for another token`);
    }
    return this.createToken(name, options);
  }

  /** Issues a token for a user. The token itself is returned once and never stored. */
  async createToken(name: string, { expiresAt = null, ...asked }: TokenOptions = {}): Promise<IssuedTokenView> {
    const user = await this.#userNamed(name);
    const { organisation, ...grant } = await tokenGrant(this.#store, user, asked);
    const plain = grant.orgId === user.id && grant.scope === 'admin' && grant.label === null;
    for (;;) {
      const issued = issueToken();
      try {
        await this.#store.addToken({
          prefix: issued.prefix,
          userId: user.id,
          digest: issued.digest,
          expiresAt,
          ...grant,
        });
        return { user, token: issued.token, prefix: issued.prefix, expiresAt, org: organisation.name, plain, ...grant };
      } catch (error) {
        // Two tokens sharing a 48-bit prefix: vanishingly rare, and simply drawn again.
        if (!(error instanceof DuplicateError)) throw error;
      }
    }
  }

  async revokeToken(prefix: string): Promise<void> {
    if (!(await this.#store.revokeToken(prefix)))
      throw new AdminError(`no live token with prefix ${JSON.stringify(prefix)}`);
  }

  async addProject(name: string, url: string, options: ProjectOptions = {}): Promise<ProjectRecord> {
    const user = await this.#ownerNamed(name);
    const settings = adminChecked(() => projectSettings(url, options));
    try {
      return await this.#store.addProject({ userId: user.id, ...settings });
    } catch (error) {
      if (error instanceof DuplicateError) throw new AdminError(`${name} already has a project at ${settings.url}`);
      throw error;
    }
  }

  async removeProject(name: string, url: string): Promise<void> {
    const user = await this.#ownerNamed(name);
    const normalized = normalizeProjectUrl(url) ?? url;
    if (!(await this.#store.removeProject(user.id, normalized)))
      throw new AdminError(`${name} has no project at ${normalized}`);
  }

  /** Replaces the budgets of a user's project. */
  async setBudgets(name: string, url: string, budgets: Budgets): Promise<ProjectRecord> {
    const project = await this.#projectOf(name, url);
    await this.#store.setProjectBudgets(project.id, budgets);
    return { ...project, budgets };
  }

  /**
   * Replaces a project's user flow, checked as the API's PUT checks it (null: none, its updates
   * measure a navigation of its URL again); with the flow it had.
   */
  async setFlow(name: string, url: string, flow: unknown): Promise<{ project: ProjectRecord; previous: Flow | null }> {
    const project = await this.#projectOf(name, url);
    const checked = flow === null ? null : await checkedFlow(this.#targetGuard, flow);
    await this.#store.setProjectFlow(project.id, checked);
    return { project: { ...project, flow: checked }, previous: project.flow };
  }

  /** Adds a webhook of a user; the record carries its secret, to be shown once. */
  async addWebhook(
    name: string,
    targetUrl: string,
    { project, format = 'json' }: { project?: string; format?: 'json' | 'slack' } = {},
  ) {
    const user = await this.#ownerNamed(name);
    const scoped = project === undefined ? null : await this.#projectOf(name, project);
    try {
      const rules = { targets: this.#targetGuard, secrets: this.#secrets, maxPerUser: this.#maxWebhooksPerUser };
      return await addWebhook(this.#store, rules, {
        userId: user.id,
        targetUrl,
        projectUrl: scoped?.url ?? null,
        format,
      });
    } catch (error) {
      if (error instanceof WebhookRefused || error instanceof WebhookLimitReached) throw new AdminError(error.message);
      throw error;
    }
  }

  async removeWebhook(name: string, id: string): Promise<void> {
    const user = await this.#ownerNamed(name);
    if (!(await this.#store.removeWebhook(user.id, id))) throw new AdminError(`${name} has no webhook ${id}`);
  }

  /** A user's webhooks with their newest deliveries. */
  async webhooks(name: string): Promise<Webhook[]> {
    return listWebhookViews(this.#store, (await this.#ownerNamed(name)).id);
  }

  /** Seals and stores a project's credentials for its login (cookies, headers, a login script). */
  async setAuth(name: string, url: string, auth: PageAuth): Promise<ProjectRecord> {
    const project = await this.#projectOf(name, url);
    const parsed = pageAuthSchema.safeParse(auth);
    if (!parsed.success)
      throw new AdminError(
        parsed.error.issues.map((i) => `${i.path.join('.') || 'credentials'}: ${i.message}`).join('; '),
      );
    // Headers and cookies go to the project's origin only; a login script may start anywhere the guard allows.
    if (!this.#secrets.ready)
      throw new AdminError(
        'no PERFWATCH_SECRETS_KEY: set the key the gateway uses (openssl rand -base64 32) to store credentials',
      );
    const sealed = sealProjectAuth(this.#secrets, project, parsed.data);
    await this.#store.setProjectAuth(project.id, sealed);
    return { ...project, auth: sealed };
  }

  async clearAuth(name: string, url: string): Promise<void> {
    await this.#store.setProjectAuth((await this.#projectOf(name, url)).id, null);
  }

  /**
   * Reseals every project's credentials under PERFWATCH_SECRETS_KEY, opening them with it or
   * PERFWATCH_SECRETS_KEY_PREVIOUS, and those sealed before they were bound to the project's URL;
   * returns how many were resealed, and the projects whose credentials it could not open (it
   * goes on past them; the CLI then fails). Run after setting the new key (and the old one as
   * previous) on the gateways; then the previous key can go. Webhook secrets are sealed under it
   * too, those stored unsealed (before sealing, or without a key) included, and repository links' secrets.
   */
  async rotateSecretsKey(): Promise<{
    resealed: number;
    current: number;
    unreadable: Array<{ user: string; url: string; reason: string }>;
    webhookSecrets: number;
    unreadableWebhooks: Array<{ user: string; id: string; reason: string }>;
    forgeLinks: number;
    unreadableForgeLinks: Array<{ user: string; url: string; reason: string }>;
  }> {
    const secrets = this.#secrets;
    if (!secrets.ready) throw new AdminError('no PERFWATCH_SECRETS_KEY to reseal under');
    // By the organisations that own them (a user's own has the user's id and name).
    const names = new Map((await this.#store.listOrganisations()).map((o) => [o.id, o.name]));
    let resealed = 0;
    let current = 0;
    const unreadable: Array<{ user: string; url: string; reason: string }> = [];
    const projects = await this.#store.listProjects();
    for (const project of projects) {
      try {
        const outcome = await this.#resealProject(project);
        if (outcome === 'resealed') resealed += 1;
        else if (outcome === 'current') current += 1;
      } catch (error) {
        if (!(error instanceof SecretKeyError || error instanceof AdminError)) throw error;
        unreadable.push({ user: names.get(project.userId) ?? project.userId, url: project.url, reason: error.message });
      }
    }
    const webhooks = await this.#sealWebhookSecrets(names);
    const links = await resealForgeLinks(this.#store, secrets, projects);
    return {
      resealed,
      current,
      unreadable,
      webhookSecrets: webhooks.sealed,
      unreadableWebhooks: webhooks.unreadable,
      forgeLinks: links.resealed,
      unreadableForgeLinks: links.unreadable.map(({ project, reason }) => ({
        user: names.get(project.userId) ?? project.userId,
        url: project.url,
        reason,
      })),
    };
  }

  /**
   * Reseals one project's credentials unless they are current, writing only over the value it
   * read: a set-auth, clear-auth or another rotation that wrote meanwhile is not undone, and
   * what it wrote is looked at again. SecretKeyError when they cannot be opened; AdminError when
   * they kept changing under it.
   */
  async #resealProject(listed: ProjectRecord): Promise<'resealed' | 'current' | 'none'> {
    const secrets = this.#secrets;
    let project: ProjectRecord | null = listed;
    for (let attempt = 0; project?.auth; attempt++) {
      const read = readProjectAuth(secrets, project)!;
      if (read.urlBound && secrets.isCurrent(project.auth)) return 'current';
      const sealed = sealProjectAuth(secrets, project, read.auth);
      if (await this.#store.replaceProjectAuth(project.id, project.auth, sealed)) return 'resealed';
      if (attempt >= MAX_RESEAL_ATTEMPTS)
        throw new AdminError(`its credentials changed ${attempt + 1} times while being resealed; run it again`);
      project = await this.#store.findProject(project.userId, project.url);
    }
    return 'none';
  }

  /**
   * Seals every webhook secret not sealed under the current key: how many it sealed, and the
   * ones it could not open (named, and gone on past, as projects' credentials are). A webhook's
   * secret never changes once made, so no write here can undo another's.
   */
  async #sealWebhookSecrets(
    names: ReadonlyMap<string, string>,
  ): Promise<{ sealed: number; unreadable: Array<{ user: string; id: string; reason: string }> }> {
    let sealed = 0;
    const unreadable: Array<{ user: string; id: string; reason: string }> = [];
    for (const [userId, user] of names)
      for (const hook of await this.#store.listWebhooks(userId)) {
        if (webhookSecretIsCurrent(this.#secrets, hook.secret)) continue;
        let secret: string;
        try {
          secret = openWebhookSecret(this.#secrets, hook);
        } catch (error) {
          unreadable.push({ user, id: hook.id, reason: (error as Error).message });
          continue;
        }
        await this.#store.setWebhookSecret(hook.id, storedWebhookSecret(this.#secrets, userId, secret));
        sealed += 1;
      }
    return { sealed, unreadable };
  }

  /** Users with their projects and their tokens (the digests left out; each with its organisation's name), revoked ones included. */
  async list(): Promise<
    Array<{ user: UserRecord; projects: ProjectRecord[]; tokens: Array<Omit<TokenRecord, 'digest'> & { org: string }> }>
  > {
    const users = await this.#store.listUsers();
    const orgNames = new Map((await this.#store.listOrganisations()).map((o) => [o.id, o.name]));
    return Promise.all(
      users.map(async (user) => ({
        user,
        projects: await this.#store.listProjects(user.id),
        tokens: (await this.#store.listTokens(user.id)).map(({ digest: _digest, ...token }) => ({
          ...token,
          org: orgNames.get(token.orgId) ?? token.orgId,
        })),
      })),
    );
  }
}
