import { z } from 'zod';
import { ROLES, roleSchema, type Role } from '../access.ts';
import { once, oneOf } from './request-fields.ts';

// ---- /v1/members ------------------------------------------------------------------------

/** What a request of /v1/members asks: the organisation's members (GET), a member's role (PUT), a removal (DELETE). */
export type MembersParams =
  { action: 'list' } | { action: 'set'; user: string; role: Role } | { action: 'remove'; user: string };

const userName = z
  .string(once('user'))
  .min(1, 'user is required')
  .max(200, 'user is longer than 200 characters')
  .meta({ description: "A user's name, as `perfwatch admin create-user` or sign-in made it." });

/** No parameters: every member of the caller's organisation. */
export const membersQuerySchema = z.strictObject({}).transform((): MembersParams => ({ action: 'list' }));
/** PUT: adds an existing user to the organisation with this role, or changes a member's role. */
export const membersBodySchema = z
  .strictObject({
    user: userName,
    role: oneOf('role', ROLES).meta({
      description: `${ROLES.join(', ')}: viewer reads; editor also changes projects, budgets, annotations, webhooks and runs updates; admin also manages members, tokens and credentials.`,
    }),
  })
  .transform(({ user, role }): MembersParams => ({ action: 'set', user, role }));
/** DELETE: the member to remove (their tokens of this organisation stop working). */
export const memberDeleteSchema = z
  .strictObject({ user: userName })
  .transform(({ user }): MembersParams => ({ action: 'remove', user }));

/** A member as the API shows them. */
const memberViewSchema = z
  .object({
    user: z.string().meta({ description: "The member's user name." }),
    role: roleSchema,
    source: z
      .enum(['manual', 'sso'])
      .meta({ description: "manual: given by an admin; sso: by the identity provider's groups at sign-in." }),
    since: z.iso.datetime().meta({ description: 'When they became a member.' }),
  })
  .meta({ id: 'Member' });
export type MemberView = z.infer<typeof memberViewSchema>;

/** GET: the organisation's members, oldest first. */
export const memberListSchema = z.object({ members: z.array(memberViewSchema) }).meta({ id: 'MemberList' });
/** PUT: the member as they are now; `added`: they were not a member before. */
export const memberChangedSchema = z
  .object({ member: memberViewSchema, added: z.boolean() })
  .meta({ id: 'MemberChanged' });
/** DELETE: that they are no longer a member. */
export const memberRemovedSchema = z
  .object({ user: z.string(), removed: z.literal(true) })
  .meta({ id: 'MemberRemoved' });
