import { z } from 'zod';
import { ownId, type StoredForms } from '../../store/record-forms.ts';

export interface AnnotationRecord {
  id: string;
  projectId: string;
  date: Date;
  text: string;
  link: string | null;
  createdAt: Date;
}

export type NewAnnotation = Omit<AnnotationRecord, 'id' | 'createdAt'>;

/** The deploy markers (annotations) on a project's history. */
export interface AnnotationsStore {
  addAnnotation(annotation: NewAnnotation): Promise<AnnotationRecord>;
  /** A project's annotations in [from, to), by date: with `limit`, the newest `limit` of them. */
  listAnnotations(projectId: string, range?: { from?: Date; to?: Date; limit?: number }): Promise<AnnotationRecord[]>;
  countAnnotations(projectId: string): Promise<number>;
  /** Removes one annotation of the project; false when it has none of that id. */
  removeAnnotation(projectId: string, id: string): Promise<boolean>;
  /** Retention: annotations dated before `before`, of every project. */
  deleteAnnotationsBefore(before: Date): Promise<number>;
}

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function annotationRecords(forms: StoredForms) {
  const { id, time } = forms;
  const annotation = z.object({
    ...ownId(forms),
    projectId: id,
    date: time,
    text: z.string(),
    link: z.string().nullable(),
  }) satisfies z.ZodType<AnnotationRecord>;
  return { annotation };
}
