import { z } from 'zod';

/**
 * The code change a snapshot measured: its commit, branch and pull (or merge) request, as a CI
 * job or a forge's event gave them. Every member is optional and the object is absent from an
 * answer when none was given, so the seed's answers keep their shape.
 */

/** A git object name: SHA-1 (40 hex digits) or SHA-256 (64), or an abbreviation of at least 7. */
export const COMMIT_PATTERN = /^[0-9a-f]{7,64}$/;
/** Longer branch names than git hosts allow are refused rather than cut. */
const MAX_BRANCH_LENGTH = 255;
/** Pull and merge request numbers are positive 32-bit integers on every forge perfwatch reports to. */
export const MAX_PULL_REQUEST = 2_147_483_647;

/**
 * git's own rules for a ref name (git-check-ref-format), the ones that matter here: no control
 * characters, spaces or `~^:?*[\`, no `..`, `@{` or `//`, not starting with `-` or `/` nor
 * ending with `/`, `.` or `.lock`.
 */
export function isBranchName(text: string): boolean {
  return (
    text.length > 0 &&
    text.length <= MAX_BRANCH_LENGTH &&
    // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
    !/[\u0000-\u0020\u007f~^:?*[\\]/.test(text) &&
    !/\.\.|@\{|\/\//.test(text) &&
    !/^[-/]|[/.]$|\.lock$/.test(text)
  );
}

export const revisionSchema = z
  .object({
    commit: z.string().regex(COMMIT_PATTERN).optional(),
    branch: z.string().refine(isBranchName).optional(),
    pullRequest: z.number().int().min(1).max(MAX_PULL_REQUEST).optional(),
  })
  .meta({
    id: 'Revision',
    description:
      'The code change measured, as the update was given it: commit (lower-case hex), branch, pull or merge request number. Present only when the update had at least one.',
  });
export type Revision = z.infer<typeof revisionSchema>;

/** The revision of an update's parameters, or undefined when it has none (so answers leave it out). */
export function revisionOf(params: Revision): Revision | undefined {
  const revision: Revision = {
    ...(params.commit === undefined ? {} : { commit: params.commit }),
    ...(params.branch === undefined ? {} : { branch: params.branch }),
    ...(params.pullRequest === undefined ? {} : { pullRequest: params.pullRequest }),
  };
  return Object.keys(revision).length > 0 ? revision : undefined;
}
