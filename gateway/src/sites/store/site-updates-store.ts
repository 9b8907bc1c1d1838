import { z } from 'zod';
import type { StoredForms } from '../../store/record-forms.ts';

/** One page of a site update: its own async update, or why it could not be admitted. */
export interface SiteUpdatePage {
  url: string;
  /** Its async update; null: it was refused (see reason). */
  updateId: string | null;
  /** Why its update could not be admitted or failed afterwards; null: it was admitted. */
  reason: string | null;
}

/**
 * A site update (issue 34): one record naming its pages' async updates, written once each was
 * submitted (and before its id is answered), so its progress is computed from their records,
 * after a gateway restart too.
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
  /** Marks a page of it failed, with the reason (its update could not be admitted). */
  failSiteUpdatePage(id: string, url: string, reason: string): Promise<void>;
}

/** A failure as kept apart from the pages: appended, never rewritten. */
interface PageFailure {
  url: string;
  reason: string;
}

/** The pages as the record shows them: each with the reason it failed, when it did. */
const pagesWithFailures = (
  pages: ReadonlyArray<Omit<SiteUpdatePage, 'reason'>>,
  failures: readonly PageFailure[],
): SiteUpdatePage[] => {
  const reasons = new Map(failures.map((f) => [f.url, f.reason]));
  return pages.map((page) => ({ ...page, reason: reasons.get(page.url) ?? null }));
};

/** The records of this slice as each backend reads them back (see record-forms.ts). */
export function siteUpdateRecords(forms: StoredForms) {
  const { id, time, structured } = forms;
  const pages = structured(z.array(z.object({ url: z.string(), updateId: z.string().nullable() })));
  const failures = structured(z.array(z.object({ url: z.string(), reason: z.string() }))).default(() => []);
  return z
    .object({ id: z.string(), userId: id, siteId: z.string(), origin: z.string(), createdAt: time, pages, failures })
    .transform(({ pages, failures, ...rest }): SiteUpdateRecord => ({
      ...rest,
      pages: pagesWithFailures(pages, failures),
    }));
}
