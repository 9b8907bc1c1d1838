import type { Request, Response } from 'express';
import { formatApiDateTime, truncateToSecond, type Annotation, type AnnotationList } from '@perfwatch/common';
import { annotationsBodySchema, annotationsQuerySchema, parseRequest } from '../request-params.ts';
import type { AnnotationRecord, Store } from '../store/store.ts';
import { callerProject } from './caller-project.ts';

const view = (url: string, a: AnnotationRecord): Annotation => ({
  id: a.id,
  url,
  date: formatApiDateTime(a.date),
  text: a.text,
  link: a.link,
});

/**
 * `GET|POST /v1/annotations`: a project's annotations (deploy markers), by date; with `text`
 * one is added first (`added`).
 */
export function annotationsRoute({ store, now = () => new Date() }: { store: Store; now?: () => Date }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, { query: annotationsQuerySchema, body: annotationsBodySchema });
    const project = await callerProject(store, req, params.url);
    const added = params.add
      ? await store.addAnnotation({
          projectId: project.id,
          date: truncateToSecond(params.add.date ?? now()),
          text: params.add.text,
          link: params.add.link ?? null,
        })
      : null;
    const listed = await store.listAnnotations(project.id, {
      ...(params.from ? { from: params.from } : {}),
      ...(params.to ? { to: params.to } : {}),
    });
    res.json({
      annotations: listed.map((a) => view(project.url, a)),
      ...(added ? { added: view(project.url, added) } : {}),
    } satisfies AnnotationList);
  };
}
