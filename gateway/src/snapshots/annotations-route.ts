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
  now = () => new Date(),
}: {
  store: Pick<ProjectsStore, 'findProject'> & AnnotationsStore;
  now?: () => Date;
}) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, API_ENDPOINTS.annotations);
    const project = await callerProject(store, req, params.url);
    if (params.remove && !(await store.removeAnnotation(project.id, params.remove)))
      throw new ApiError('NOT_FOUND', 'The project has no annotation of that id.', [`remove: ${params.remove}`]);
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
    }
    // One more than the page: whether older ones were left out. The page then ends short of the
    // oldest second it reached, so that `next` (exclusive) leaves no annotation of that second out.
    const listed = await store.listAnnotations(project.id, {
      ...(params.from ? { from: params.from } : {}),
      ...(params.to ? { to: params.to } : {}),
      limit: params.limit + 1,
    });
    let page = listed;
    let next: Date | null = null;
    if (listed.length > params.limit) {
      const cut = listed[0]!.date.getTime();
      page = listed.filter((a) => a.date.getTime() > cut);
      next = new Date(cut + 1_000);
      // More than a page in one second: the page as it is, going on before its oldest second.
      if (page.length === 0) {
        page = listed.slice(1);
        next = page[0]!.date;
      }
    }
    res.json({
      annotations: page.map((a) => view(project.url, a)),
      ...(added ? { added: view(project.url, added) } : {}),
      ...(params.remove ? { removed: params.remove } : {}),
      ...(next ? { next: formatApiDateTime(next) } : {}),
    } satisfies AnnotationList);
  };
}
