import { z } from 'zod';
import { FORGES, type Forge } from '../forge/forge-client.ts';
import { isBranchName } from '../revision.ts';
import { oneOf, projectUrl } from './request-fields.ts';

/** Where each forge's API is when the link names none (Gitea has no public default). */
const DEFAULT_FORGE_API_URLS: Readonly<Record<Forge, string | null>> = {
  github: 'https://api.github.com',
  gitlab: 'https://gitlab.com/api/v4',
  gitea: null,
};

/** The placeholders a preview URL template may hold, each filled from the event. */
const PREVIEW_PLACEHOLDERS = ['pullRequest', 'branch', 'sha'] as const;

/** GitHub and Gitea: `owner/name`; GitLab: the project's path with its namespace(s), or its numeric id. */
const OWNER_NAME = /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/;
const GITLAB_PROJECT = /^(?:\d{1,20}|[A-Za-z0-9_.-]{1,255}(?:\/[A-Za-z0-9_.-]{1,255}){1,20})$/;
/** A webhook secret short enough to guess would let anyone queue measurements. */
const MIN_WEBHOOK_SECRET = 16;

const httpUrl = (text: string): boolean => {
  const url = URL.parse(text);
  return (url?.protocol === 'https:' || url?.protocol === 'http:') && url.username === '' && url.password === '';
};

/** Whether `template` is an http(s) URL once its placeholders are filled, naming no unknown placeholder. */
function isPreviewTemplate(template: string): boolean {
  const names = [...template.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]!);
  if (names.some((name) => !(PREVIEW_PLACEHOLDERS as readonly string[]).includes(name))) return false;
  // Filled as an event would fill them: a number, a DNS-safe branch, a commit.
  const sample: Record<string, string> = { pullRequest: '1', branch: 'b', sha: 'a1b2c3d' };
  return httpUrl(template.replace(/\{([^}]*)\}/g, (_, name: string) => sample[name]!));
}

const repositoryField = z
  .string({ error: 'repository must be a string' })
  .min(1, 'repository is required')
  .max(1024, 'repository is longer than 1024 characters');

// ---- /v1/projects/repository --------------------------------------------------------------

/** A project's link to its repository, as PUT gives it (secrets in clear, in the body only). */
export interface RepositoryLinkInput {
  forge: Forge;
  repository: string;
  apiUrl: string;
  token: string;
  webhookSecret: string;
  previewUrl: string | null;
  defaultBranch: string;
}

export type RepositoryParams = { url: string } & ({ set: RepositoryLinkInput } | { set?: undefined });

/** GET reads and DELETE removes a project's link, named by its URL (secrets never travel in a URL). */
export const repositoryQuerySchema = z
  .strictObject({ url: projectUrl })
  .transform(({ url }): RepositoryParams => ({ url }));

/** PUT: links the project, replacing any link it had. */
export const repositoryBodySchema = z
  .strictObject({
    url: projectUrl,
    forge: oneOf('forge', FORGES),
    repository: repositoryField.meta({
      description: 'GitHub, Gitea: `owner/name`; GitLab: the project path with its namespace, or its numeric id.',
    }),
    apiUrl: z
      .string({ error: 'apiUrl must be a string' })
      .max(2048, 'apiUrl is longer than 2048 characters')
      .refine(httpUrl, 'apiUrl must be an absolute http(s) URL without credentials')
      .optional()
      .meta({
        description:
          'The forge API base: default https://api.github.com, https://gitlab.com/api/v4; required for gitea.',
      }),
    token: z
      .string({ error: 'token must be a string' })
      .min(1, 'token is required')
      .max(4096, 'token is longer than 4096 characters')
      .meta({ description: 'The forge API token the reports are posted with: sealed at rest, never returned.' }),
    webhookSecret: z
      .string({ error: 'webhookSecret must be a string' })
      .min(MIN_WEBHOOK_SECRET, `webhookSecret must have at least ${MIN_WEBHOOK_SECRET} characters`)
      .max(1024, 'webhookSecret is longer than 1024 characters')
      .meta({ description: "The secret the forge's webhook is configured with: never returned." }),
    previewUrl: z
      .string({ error: 'previewUrl must be a string' })
      .max(2048, 'previewUrl is longer than 2048 characters')
      .refine(
        isPreviewTemplate,
        'previewUrl must be an http(s) URL whose only placeholders are {pullRequest} {branch} {sha}',
      )
      .optional()
      .meta({
        description:
          "The preview's origin, a template (`https://pr-{pullRequest}.preview.example`); required for gitea.",
      }),
    defaultBranch: z
      .string({ error: 'defaultBranch must be a string' })
      .refine(isBranchName, 'defaultBranch must be a branch name')
      .optional()
      .meta({ description: 'The branch previews are compared against; default main.' }),
  })
  .superRefine((link, ctx) => {
    const pattern = link.forge === 'gitlab' ? GITLAB_PROJECT : OWNER_NAME;
    if (!pattern.test(link.repository))
      ctx.addIssue({
        code: 'custom',
        path: ['repository'],
        message:
          link.forge === 'gitlab'
            ? 'repository must be a project path (group/name) or id'
            : 'repository must be owner/name',
      });
    if (link.forge === 'gitea' && link.apiUrl === undefined)
      ctx.addIssue({ code: 'custom', path: ['apiUrl'], message: 'apiUrl is required for gitea' });
    if (link.forge === 'gitea' && link.previewUrl === undefined)
      ctx.addIssue({ code: 'custom', path: ['previewUrl'], message: 'previewUrl is required for gitea' });
  })
  .transform(
    ({ url, forge, repository, apiUrl, token, webhookSecret, previewUrl, defaultBranch }): RepositoryParams => ({
      url,
      set: {
        forge,
        repository,
        apiUrl: (apiUrl ?? DEFAULT_FORGE_API_URLS[forge]!).replace(/\/+$/, ''),
        token,
        webhookSecret,
        previewUrl: previewUrl ?? null,
        defaultBranch: defaultBranch ?? 'main',
      },
    }),
  );

/** A link as the API shows it: never a secret, only that each is set. */
export const repositoryLinkViewSchema = z
  .object({
    url: z.string(),
    forge: z.enum(FORGES),
    repository: z.string(),
    apiUrl: z.string(),
    previewUrl: z.string().nullable(),
    defaultBranch: z.string(),
    tokenSet: z.literal(true),
    webhookSecretSet: z.literal(true),
  })
  .meta({ id: 'RepositoryLink' });
export type RepositoryLinkView = z.infer<typeof repositoryLinkViewSchema>;

/** DELETE's answer. */
export const repositoryUnlinkedSchema = z
  .object({ url: z.string(), removed: z.literal(true) })
  .meta({ id: 'RepositoryUnlinked' });

// ---- POST /v1/forge-events/{forge} ----------------------------------------------------------

/** What the receiver answers a forge: queued, a redelivery of an event already queued, or ignored. */
export const forgeEventAnswerSchema = z.union([
  z.object({ ok: z.literal(1), id: z.string(), previewUrl: z.string() }),
  z.object({ ok: z.literal(1), duplicate: z.literal(true), id: z.string() }),
  z.object({ ok: z.literal(1), ignored: z.string() }),
]);
export type ForgeEventAnswer = z.infer<typeof forgeEventAnswerSchema>;
