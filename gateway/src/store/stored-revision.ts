import { revisionOf, revisionSchema, type Revision } from '@perfwatch/common';
import type { StoredForms } from './record-forms.ts';

/**
 * The code change an update measured, as updates, snapshots and KPI records keep it: a
 * structured field, null or absent on records without one (every record written before
 * revisions were kept).
 */
export const storedRevision = ({ structured }: StoredForms) =>
  structured(revisionSchema)
    .nullish()
    .transform((revision) => revision ?? undefined);

/** `{revision}` when there is one, `{}` otherwise: records and answers without one keep their shape. */
export function revisionMember(revision: Revision | null | undefined): { revision?: Revision } {
  const some = revision ? revisionOf(revision) : undefined;
  return some ? { revision: some } : {};
}

/**
 * The stored commits a commit filter finds: those it abbreviates (or equals). Hex digits all sort
 * before `g`, so they are the strings from `commit` up to `commit + 'g'`: a range both backends
 * read the same way.
 */
export const commitRange = (commit: string): { from: string; to: string } => ({ from: commit, to: `${commit}g` });
