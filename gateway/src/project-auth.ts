import { pageAuthSchema, type PageAuth } from '@perfwatch/common';
import { SecretKeyError, type SecretBox } from './secret-box.ts';
import type { ProjectRecord } from './store/store.ts';

/** A project's credentials, sealed for storing: bound to the project, so they open for it alone. */
export function sealProjectAuth(box: SecretBox, projectId: string, auth: PageAuth): string {
  return box.seal(JSON.stringify(pageAuthSchema.parse(auth)), projectId);
}

/** The project's credentials, opened and checked; undefined when it has none. */
export function openProjectAuth(box: SecretBox, project: Pick<ProjectRecord, 'id' | 'auth'>): PageAuth | undefined {
  if (!project.auth) return undefined;
  const parsed = pageAuthSchema.safeParse(JSON.parse(box.open(project.auth, project.id)));
  if (!parsed.success) throw new SecretKeyError("the project's stored credentials are not valid credentials");
  return parsed.data;
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
