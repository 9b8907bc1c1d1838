import { z } from 'zod';
import { FORGES, revisionSchema, type Forge, type Revision } from '@perfwatch/common';
import type { StoredForms } from '../../store/record-forms.ts';

/**
 * A project's link to its repository. The forge API token and (GitHub, Gitea) the webhook
 * secret are sealed (secret-box.ts, bound to the project: forge-link.ts); GitLab sends its
 * secret in clear, so only its SHA-256 digest is kept.
 */
export interface ForgeLinkRecord {
  projectId: string;
  userId: string;
  forge: Forge;
  repository: string;
  /** What the receiver matches a payload's repository by: its name in lower case. */
  repositoryKey: string;
  apiUrl: string;
  tokenSealed: string;
  /** GitHub, Gitea: the HMAC key, sealed; GitLab: null. */
  webhookSecretSealed: string | null;
  /** GitLab: SHA-256 (hex) of the X-Gitlab-Token the forge sends; others: null. */
  webhookSecretDigest: string | null;
  previewUrl: string | null;
  defaultBranch: string;
  updatedAt: Date;
}

/** One accepted forge event: the preview update it queued, and whether the reporter has told the forge. */
export interface ForgeEventRecord {
  /** The forge's own identity of the event (forge-events.ts): a redelivery has the same. */
  key: string;
  forge: Forge;
  linkProjectId: string;
  previewProjectId: string;
  previewUrl: string;
  /** null only while the update is being queued. */
  updateId: string | null;
  revision: Revision;
  receivedAt: Date;
  reportedAt: Date | null;
  reportAttempts: number;
  lastReportError: string | null;
  /** The reporter does not try again before this; null: at once. */
  nextAttemptAt: Date | null;
}

/** What a key rotation reseals of a link. */
export type LinkSecrets = Pick<ForgeLinkRecord, 'tokenSealed' | 'webhookSecretSealed'>;

export type NewForgeEvent = Omit<
  ForgeEventRecord,
  'updateId' | 'reportedAt' | 'reportAttempts' | 'lastReportError' | 'nextAttemptAt'
>;

/** Repository links, preview projects and the events received from forges. */
export interface ForgeStore {
  /** Links the project, replacing any link it had. */
  setForgeLink(link: ForgeLinkRecord): Promise<void>;
  findForgeLink(projectId: string): Promise<ForgeLinkRecord | null>;
  removeForgeLink(projectId: string): Promise<boolean>;
  /** Replaces a link's sealed secrets only while its token is still `expected` (a PUT meanwhile stands); false otherwise. */
  replaceForgeLinkSecrets(projectId: string, expected: string, sealed: LinkSecrets): Promise<boolean>;
  /** The links of `forge` to any of `repositoryKeys` (GitLab names a project by path and id). */
  listForgeLinks(forge: Forge, repositoryKeys: readonly string[]): Promise<ForgeLinkRecord[]>;
  /** Marks a project as the preview of a linked project (kept once: the first mark stands). */
  markPreviewProject(previewProjectId: string, linkProjectId: string): Promise<void>;
  /** The linked project a preview project measures for, or null when it is none's preview. */
  previewOf(projectId: string): Promise<string | null>;
  /** Every project marked a preview, by id: what retention looks at. */
  listPreviewProjects(): Promise<string[]>;
  /** Stores an accepted event; DuplicateError when its key is already stored (a redelivery). */
  addForgeEvent(event: NewForgeEvent): Promise<void>;
  findForgeEvent(key: string): Promise<ForgeEventRecord | null>;
  /** The update queued for the event. */
  setForgeEventUpdate(key: string, updateId: string): Promise<void>;
  /** Forgets an event whose update could not be queued, so its redelivery is measured. */
  removeForgeEvent(key: string): Promise<void>;
  /** Events queued and not reported, due at `now`, the oldest first. */
  listUnreportedForgeEvents(limit: number, now?: Date): Promise<ForgeEventRecord[]>;
  /**
   * Takes the event's next attempt at reporting until `until` (its `reportAttempts` as listed):
   * false when another gateway took that attempt first, or the event was reported or tried since.
   * Two replicas never report one event at once, so its comment is never added twice.
   */
  claimForgeEvent(event: Pick<ForgeEventRecord, 'key' | 'reportAttempts'>, now: Date, until: Date): Promise<boolean>;
  /** Not due before `until`, no attempt counted: its preview is still being measured. */
  deferForgeEvent(key: string, until: Date): Promise<void>;
  markForgeEventReported(key: string, at: Date): Promise<void>;
  /** One more failed report: its error, and when to try again. */
  recordForgeReportFailure(key: string, error: string, nextAttemptAt: Date): Promise<void>;
  /** Retention: events received before `before`, reported or not (their redeliveries are long over). */
  deleteForgeEventsBefore(before: Date): Promise<number>;
}

/** A report error is kept this long at most: forges' error bodies can be long. */
export const MAX_REPORT_ERROR = 1000;

/** A new event's record: nothing queued or reported yet. */
export const newForgeEventRecord = (event: NewForgeEvent): ForgeEventRecord => ({
  ...event,
  updateId: null,
  reportedAt: null,
  reportAttempts: 0,
  lastReportError: null,
  nextAttemptAt: null,
});

/** The key a link is found by from a payload: repository names are case-insensitive on all three forges. */
export const repositoryKeyOf = (repository: string): string => repository.toLowerCase();

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function forgeRecords({ id, time, structured }: StoredForms) {
  const link = z.object({
    projectId: id,
    userId: id,
    forge: z.enum(FORGES),
    repository: z.string(),
    repositoryKey: z.string(),
    apiUrl: z.string(),
    tokenSealed: z.string(),
    webhookSecretSealed: z.string().nullable().default(null),
    webhookSecretDigest: z.string().nullable().default(null),
    previewUrl: z.string().nullable().default(null),
    defaultBranch: z.string(),
    updatedAt: time,
  }) satisfies z.ZodType<ForgeLinkRecord>;
  const event = z.object({
    key: z.string(),
    forge: z.enum(FORGES),
    linkProjectId: id,
    previewProjectId: id,
    previewUrl: z.string(),
    updateId: z.string().nullable().default(null),
    revision: structured(revisionSchema),
    receivedAt: time,
    reportedAt: time.nullable().default(null),
    reportAttempts: z.number().int().min(0),
    lastReportError: z.string().nullable().default(null),
    nextAttemptAt: time.nullable().default(null),
  }) satisfies z.ZodType<ForgeEventRecord>;
  return { link, event };
}
