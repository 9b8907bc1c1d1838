import express, { type Request, type Response, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { ApiError, FORGES, type Forge } from '@perfwatch/common';
import type { SecretBox } from '../accounts/secret-box.ts';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import { openWebhookSecret } from './forge-link.ts';
import { EVENT_HEADERS, payloadRepositoryKeys, readForgeEvent } from './forge-events.ts';
import { verifyGiteaSignature, verifyGithubSignature, verifyGitlabToken } from './forge-signatures.ts';
import { acceptPreview, type PreviewDeps } from './preview-acceptance.ts';
import type { ForgeLinkRecord, ForgeStore } from './store/forge-store.ts';

/** The largest delivery taken: forges' deployment and pull request payloads are a few tens of kilobytes. */
const MAX_FORGE_EVENT_BYTES = 1024 * 1024;

/** The header each forge proves a delivery with. */
const SIGNATURE_HEADERS: Readonly<Record<Forge, string>> = {
  github: 'x-hub-signature-256',
  gitlab: 'x-gitlab-token',
  gitea: 'x-gitea-signature',
};

export interface ForgeReceiverDeps extends PreviewDeps {
  store: PreviewDeps['store'] & Pick<ForgeStore, 'listForgeLinks'> & Pick<ProjectsStore, 'listProjects'>;
  secrets: SecretBox;
  logger: Logger;
  /** Counts a refused delivery against its address, as a failed authentication (AUTH_FAILURES_PER_MINUTE). */
  failed?: (req: Request) => Promise<void>;
}

/**
 * `POST /v1/forge-events/{github|gitlab|gitea}`: a forge's webhook. It carries no API token
 * (forges cannot send one): the forge's signature over the raw body, checked against the
 * secrets of the links to the repository the payload names, is what admits it. Refused: 401,
 * nothing stored or queued. Admitted: the event is read, and a successful deployment (Gitea: a
 * pull request opened or updated) queues one update of its preview, once per event.
 */
export function forgeReceiver(deps: ForgeReceiverDeps): RequestHandler[] {
  const raw = express.raw({ type: () => true, limit: MAX_FORGE_EVENT_BYTES });
  const receive = async (req: Request, res: Response): Promise<void> => {
    const forge = forgeOf(req.params['forge']);
    const body: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const linked = await verifiedLink(deps, forge, req, body);
    // Read only now: before its signature verified, nothing of the payload but its repository was looked at.
    const read = readForgeEvent(forge, req.get(EVENT_HEADERS[forge]), linked.payload);
    if ('ignored' in read) {
      res.status(202).json({ ok: 1, ignored: read.ignored });
      return;
    }
    const answer = await acceptPreview(deps, { ...linked, forge }, read.preview, req.requestId);
    if ('previewUrl' in answer)
      deps.logger.info(
        { requestId: req.requestId, forge, event: read.preview.key, projectId: linked.project.id, updateId: answer.id },
        'forge event: preview update queued',
      );
    res.status('ignored' in answer ? 202 : 200).json(answer);
  };
  return [raw, receive];
}

function forgeOf(text: string | string[] | undefined): Forge {
  const forge = FORGES.find((f) => f === text);
  if (!forge)
    throw new ApiError('NOT_FOUND', 'No such forge.', [`forge: one of ${FORGES.join(', ')}; ${String(text)} is none`]);
  return forge;
}

const parsedJson = (body: Buffer): unknown => {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
};

/** The link (and its project) whose secret the delivery's signature verifies against; 401 when none does. */
async function verifiedLink(
  { store, secrets, logger, failed }: ForgeReceiverDeps,
  forge: Forge,
  req: Request,
  body: Buffer,
): Promise<{ link: ForgeLinkRecord; project: ProjectRecord; payload: unknown }> {
  const payload = parsedJson(body);
  const keys = payload === undefined ? [] : payloadRepositoryKeys(forge, payload);
  const candidates = keys.length === 0 ? [] : await store.listForgeLinks(forge, keys);
  const proof = req.get(SIGNATURE_HEADERS[forge]);
  for (const link of candidates) {
    const project = (await store.listProjects(link.userId)).find((p) => p.id === link.projectId);
    if (project && signedFor(secrets, forge, link, project, body, proof, logger)) return { link, project, payload };
  }
  // Only a wrong signature for a repository linked here is a guess worth slowing down: events
  // of repositories nobody linked (an organisation's webhook, another tenant's) are refused
  // without counting, or they would lock every tenant's deliveries out of the forge's addresses.
  if (candidates.length > 0) await failed?.(req);
  // The proof's value is never logged: it is the secret itself for GitLab.
  logger.warn(
    {
      requestId: req.requestId,
      forge,
      candidates: candidates.length,
      proof: proof === undefined ? 'absent' : 'present',
    },
    'forge event refused: its signature verifies against no linked repository',
  );
  throw new ApiError('UNAUTHORIZED', 'The event is not signed by a repository linked here.', [
    `header ${SIGNATURE_HEADERS[forge]}: missing, or not made with the webhook secret of a project linked to this repository`,
  ]);
}

function signedFor(
  secrets: SecretBox,
  forge: Forge,
  link: ForgeLinkRecord,
  project: ProjectRecord,
  body: Buffer,
  proof: string | undefined,
  logger: Logger,
): boolean {
  if (forge === 'gitlab')
    return link.webhookSecretDigest !== null && verifyGitlabToken(link.webhookSecretDigest, proof);
  let secret: string;
  try {
    secret = openWebhookSecret(secrets, project, link);
  } catch (error) {
    logger.warn(
      { projectId: project.id, forge, reason: (error as Error).message },
      "a link's webhook secret cannot be opened",
    );
    return false;
  }
  return forge === 'github' ? verifyGithubSignature(secret, body, proof) : verifyGiteaSignature(secret, body, proof);
}
