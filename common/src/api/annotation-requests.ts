import { z } from 'zod';
import { dateTime, normalizeProjectUrl, once, pageLimit, parsedString, projectUrl } from './request-fields.ts';

// ---- /v1/annotations --------------------------------------------------------------------

const MAX_ANNOTATION_TEXT = 500;
/** Annotations one project may have, and a listing's page at most (and by default). */
export const MAX_ANNOTATIONS_PER_PROJECT = 1_000;
const annotationId = /^[A-Za-z0-9_-]{1,64}$/;
const annotationFields = {
  url: projectUrl,
  text: z
    .string(once('text'))
    .trim()
    .min(1, 'text must not be empty')
    .max(MAX_ANNOTATION_TEXT, `text is longer than ${MAX_ANNOTATION_TEXT} characters`)
    .optional()
    .meta({
      description:
        "Adds an annotation (a deploy marker) with this text; omitted: the project's annotations are listed.",
    }),
  date: dateTime('date').optional().meta({ description: 'With text: when it happened, UTC; omitted: now.' }),
  link: parsedString(
    z.string(once('link')).max(2048, 'link is longer than 2048 characters'),
    normalizeProjectUrl,
    'link must be an absolute http(s) URL',
  )
    .optional()
    .meta({ description: 'With text: a URL to go with it (a release, a pull request).' }),
  from: dateTime('from').optional().meta({ description: 'Listing: only annotations at or after this date-time.' }),
  to: dateTime('to')
    .optional()
    .meta({ description: 'Listing: only annotations before this date-time (the `next` of the page after this one).' }),
  limit: pageLimit(MAX_ANNOTATIONS_PER_PROJECT)
    .optional()
    .meta({
      description: `Listing: the newest this many annotations in the range (${MAX_ANNOTATIONS_PER_PROJECT} at most and by default); \`next\` says where the older ones go on.`,
    }),
  remove: z
    .string(once('remove'))
    .regex(annotationId, 'remove must be an annotation id')
    .optional()
    .meta({ description: 'POST: removes the annotation of this id.' }),
};

export type AnnotationsParams = {
  url: string;
  add: { text: string; date?: Date | undefined; link?: string | undefined } | null;
  remove: string | null;
  from?: Date | undefined;
  to?: Date | undefined;
  limit: number;
};

type AnnotationFields = { [K in keyof typeof annotationFields]?: z.output<(typeof annotationFields)[K]> } & {
  url: string;
};

function annotationAction(
  { url, text, date, link, from, to, limit, remove }: AnnotationFields,
  ctx: z.RefinementCtx,
): AnnotationsParams {
  if (text === undefined && (date !== undefined || link !== undefined))
    ctx.addIssue({ code: 'custom', message: 'date and link go with text' });
  if (remove !== undefined && text !== undefined)
    ctx.addIssue({ code: 'custom', message: 'remove and text do not go together' });
  return {
    url,
    add: text === undefined ? null : { text, date, link },
    remove: remove ?? null,
    from,
    to,
    limit: limit ?? MAX_ANNOTATIONS_PER_PROJECT,
  };
}
/** GET lists; an annotation is added by POST only. */
export const annotationsQuerySchema = z
  .strictObject({
    url: annotationFields.url,
    from: annotationFields.from,
    to: annotationFields.to,
    limit: annotationFields.limit,
  })
  .transform(annotationAction);
export const ANNOTATIONS_WRITES = ['text', 'date', 'link', 'remove'] as const;
export const annotationsBodySchema = z.strictObject(annotationFields).transform(annotationAction);
