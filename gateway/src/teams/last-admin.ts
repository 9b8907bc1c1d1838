import type { MembershipRecord } from './store/teams-store.ts';

/**
 * Whether `userId` is the only admin among an organisation's `members`: demoting or removing
 * them would leave nobody to manage its members and tokens. /v1/members and `perfwatch admin`
 * both refuse it.
 */
export const isLastAdmin = (members: readonly MembershipRecord[], userId: string): boolean =>
  members.some((m) => m.userId === userId && m.role === 'admin') &&
  !members.some((m) => m.userId !== userId && m.role === 'admin');
