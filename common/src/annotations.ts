import { z } from 'zod';

/** A deploy marker (or any note) on a project's timeline, drawn on its trend plots. */
const annotationSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    /** yyyy-MM-ddTHH:mm:ss, UTC. */
    date: z.string(),
    text: z.string(),
    link: z.string().nullable(),
  })
  .meta({ id: 'Annotation' });
export type Annotation = z.infer<typeof annotationSchema>;

/** `/v1/annotations`' answer: the project's annotations by date; `added` after an add. */
export const annotationListSchema = z
  .object({
    annotations: z.array(annotationSchema),
    added: annotationSchema.optional(),
    removed: z.string().optional().meta({ description: 'The id of the annotation removed, after a removal.' }),
    next: z.string().optional().meta({
      description:
        'Older annotations in the range were left out (the page held `limit`): pass this as `to` for the page before.',
    }),
  })
  .meta({ id: 'AnnotationList' });
export type AnnotationList = z.infer<typeof annotationListSchema>;
