import type { Request, Response } from 'express';
import {
  API_ENDPOINTS,
  ApiError,
  formatApiDateTime,
  MAX_ANNOTATIONS_PER_PROJECT,
  truncateToSecond,
  type Annotation,
  type AnnotationList,
} from '@perfwatch/common';
import type { AuditLog } from '../audit-log/audit-log.ts';
import { parseRequest } from '../http/parse-request.ts';
import type { ProjectsStore } from '../projects/store/projects-store.ts';
import type { AnnotationRecord, AnnotationsStore } from './store/annotations-store.ts';
import { callerProject } from '../accounts/caller-project.ts';

const view = (url: string, a: AnnotationRecord): Annotation => ({
  id: a.id,
  url,
  date: formatApiDateTime(a.date),
  text: a.text,
  link: a.link,
});

/**
 * `GET|POST /v1/annotations`: a project's annotations (deploy markers), by date, the newest
 * `limit` of the range (`next` pages back); POST with `text` adds one first (`added`), up to
 * MAX_ANNOTATIONS_PER_PROJECT; POST with `remove` removes one (`removed`).
 */
export function annotationsRoute({
  store,
  audit,
  now = () => new Date(),
}: {
  store: Pick<ProjectsStore, 'findProject'> & AnnotationsStore;
  audit: AuditLog;
  now?: () => Date;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.annotations);
    const project = await callerProject(store, req, params.url);
    if (params.remove && !(await store.removeAnnotation(project.id, params.remove)))
      throw new ApiError('NOT_FOUND', 'The project has no annotation of that id.', [`remove: ${params.remove}`]);
    if (params.remove)
      await audit.record(req.caller!, {
        action: 'annotation.removed',
        target: project.url,
        details: { id: params.remove },
      });
    let added: AnnotationRecord | null = null;
    if (params.add) {
      // Checked, then added: two adds at once may end one over the bound, never unboundedly.
      if ((await store.countAnnotations(project.id)) >= MAX_ANNOTATIONS_PER_PROJECT)
        throw new ApiError('BAD_REQUEST', 'The project has as many annotations as one may have.', [
          `text: at most ${MAX_ANNOTATIONS_PER_PROJECT} annotations per project; remove some (remove=<id>), or wait for retention`,
        ]);
      added = await store.addAnnotation({
        projectId: project.id,
        date: truncateToSecond(params.add.date ?? now()),
        text: params.add.text,
        link: params.add.link ?? null,
      });
      await audit.record(req.caller!, {
        action: 'annotation.added',
        target: project.url,
        details: { id: added.id, date: formatApiDateTime(added.date), text: added.text },
      });
    }
    // One more than the page: whether older ones were left out. The page then ends short of the
    // oldest second it reached, so that `next` (exclusive) leaves no annotation of that second out.
    const listed = await store.listAnnotations(project.id, {
      ...(params.from ? { from: params.from } : {}),
      ...(params.to ? { to: params.to } : {}),
      limit: params.limit + 1,
    });
    const { page, next } = pageOf(listed, params.limit);
    res.json({
      annotations: page.map((a) => view(project.url, a)),
      ...(added ? { added: view(project.url, added) } : {}),
      ...(params.remove ? { removed: params.remove } : {}),
      ...(next ? { next: formatApiDateTime(next) } : {}),
    } satisfies AnnotationList);
  };
}

/** The page of `listed` (one more than `limit`, by date) and where the page before it ends. */
function pageOf(listed: AnnotationRecord[], limit: number): { page: AnnotationRecord[]; next: Date | null } {
  if (listed.length <= limit) return { page: listed, next: null };
  const cut = listed[0]!.date.getTime();
  const page = listed.filter((a) => a.date.getTime() > cut);
  // More than a page in one second: the page as it is, going on before its oldest second.
  if (page.length === 0) return { page: listed.slice(1), next: listed[1]!.date };
  return { page, next: new Date(cut + 1_000) };
}
