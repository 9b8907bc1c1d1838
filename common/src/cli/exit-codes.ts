/**
 * The exit codes of every perfwatch program (`perfwatch start`, `admin`, `update`, `audit`,
 * `compare`, `overview`, and the servers), one meaning each, so a script or a CI step can tell
 * what happened without reading the message.
 */
export const EXIT = {
  /** Done: what was asked happened (for `update --ci`, the budgets passed). */
  ok: 0,
  /**
   * Asked and not done, or done and failed: a budget or an update failed, the store refused a
   * change (an unknown user, a project that exists), a server could not start or stop in time.
   */
  failed: 1,
  /** Nothing was done: the command line or a setting is wrong (the usage says what is right). */
  usage: 2,
  /** The gateway's API could not be used: unreachable, the token refused, an error answer. */
  api: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
