import { pageAuthSchema, type PageAuth } from '@perfwatch/common';
import { SecretKeyError, type SecretBox } from '../accounts/secret-box.ts';
import type { ProjectRecord } from '../store/store.ts';

type SealedFor = Pick<ProjectRecord, 'id' | 'url'>;

/**
 * The associated data a project's credentials are sealed with: its id and its URL, so they open
 * for that project alone and only while it names the same page (credentials must not follow a
 * URL changed in the database to another site). Values sealed before the URL was part of it are
 * bound to the id alone (legacyOwner): still read, and resealed by rotate-secrets-key.
 */
const ownerOf = (project: SealedFor): string => JSON.stringify([project.id, project.url]);
const legacyOwner = (project: SealedFor): string => project.id;

/** A project's credentials, sealed for storing: bound to the project and its URL. */
export function sealProjectAuth(box: SecretBox, project: SealedFor, auth: PageAuth): string {
  return box.seal(JSON.stringify(pageAuthSchema.parse(auth)), ownerOf(project));
}

/**
 * The project's credentials, opened and checked, and whether they were sealed bound to its URL
 * (false: sealed by an earlier version, to be resealed); undefined when it has none.
 */
export function readProjectAuth(
  box: SecretBox,
  project: SealedFor & Pick<ProjectRecord, 'auth'>,
): { auth: PageAuth; urlBound: boolean } | undefined {
  if (!project.auth) return undefined;
  let text: string;
  let urlBound = true;
  try {
    text = box.open(project.auth, ownerOf(project));
  } catch (error) {
    try {
      text = box.open(project.auth, legacyOwner(project));
      urlBound = false;
    } catch {
      throw error;
    }
  }
  let parsed;
  try {
    parsed = pageAuthSchema.safeParse(JSON.parse(text));
  } catch {
    parsed = null;
  }
  if (!parsed?.success) throw new SecretKeyError("the project's stored credentials are not valid credentials");
  return { auth: parsed.data, urlBound };
}

/** The project's credentials, opened and checked; undefined when it has none. */
export function openProjectAuth(
  box: SecretBox,
  project: SealedFor & Pick<ProjectRecord, 'auth'>,
): PageAuth | undefined {
  return readProjectAuth(box, project)?.auth;
}

/** What may be shown of credentials: names and counts, never a value. */
export function describeAuth(auth: PageAuth): string {
  const parts = [
    ...(auth.cookies?.length ? [`cookies ${auth.cookies.map((c) => c.name).join(', ')}`] : []),
    ...(auth.headers ? [`headers ${Object.keys(auth.headers).join(', ')}`] : []),
    ...(auth.login?.length ? [`a login script of ${auth.login.length} step(s)`] : []),
  ];
  return parts.join('; ');
}
