import { z } from 'zod';
import type { StoredForms } from '../../store/record-forms.ts';

/** One page of a site update: its own async update, or why it could not be admitted. */
export interface SiteUpdatePage {
  url: string;
  /** Its async update; null: it was refused (see reason). */
  updateId: string | null;
  /** Why its update could not be admitted; null: it was. */
  reason: string | null;
}

/**
 * A site update (issue 34): one record naming its pages' async updates, written once each was
 * submitted (and before its id is answered), so its progress is computed from their records,
 * after a gateway restart too. Written once, never changed: its pages' own records change.
 */
export interface SiteUpdateRecord {
  id: string;
  /** The owner organisation, as every record's `userId`. */
  userId: string;
  siteId: string;
  origin: string;
  createdAt: Date;
  pages: SiteUpdatePage[];
}

export interface SiteUpdatesStore {
  addSiteUpdate(record: SiteUpdateRecord): Promise<void>;
  /** The organisation's site update with that id; null for none (or another's). */
  findSiteUpdate(userId: string, id: string): Promise<SiteUpdateRecord | null>;
}

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function siteUpdateRecords(forms: StoredForms) {
  const { id, time, structured } = forms;
  // Nulls default: a MongoDB-wire server may drop them.
  const page = z.object({
    url: z.string(),
    updateId: z.string().nullable().default(null),
    reason: z.string().nullable().default(null),
  });
  return z.object({
    id: z.string(),
    userId: id,
    siteId: z.string(),
    origin: z.string(),
    createdAt: time,
    pages: structured(z.array(page)),
  }) satisfies z.ZodType<SiteUpdateRecord>;
}
