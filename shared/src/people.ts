import { z } from 'zod';
import { Me, Role } from './me.ts';
import { NAME_PART } from './project.ts';
import { Cursor, Limit, NextCursor } from './query.ts';
import { Timestamp } from './time.ts';

// People (contract 5.12): sign-in, invitations, members, own API keys, the audit log.

const EntityName = z.string().regex(NAME_PART, 'entity must be 1-128 of [A-Za-z0-9_.-] starting with a letter or digit');
export const Username = z.string().regex(NAME_PART, 'username must be 1-128 of [A-Za-z0-9_.-] starting with a letter or digit');
/** Long enough for any passphrase; the rules a new password must meet are checked by the server (12 characters at least, not a common one). */
const Password = z.string().min(1).max(1024);
const UserId = z.string().min(1).max(128);
const RecordId = z.string().min(1).max(128);

export const SignInReq = z.strictObject({ username: Username, password: Password });
export type SignInReq = z.infer<typeof SignInReq>;
/** The signed-in user; the session travels in the `loupe_session` cookie. */
export const SignInRes = z.strictObject({ user: Me }).meta({ id: 'SignInRes' });

export const SignOutReq = z.strictObject({});
export const SignOutRes = z.strictObject({
  signed_out: z.boolean().meta({ description: 'whether a session was ended (false when the request carried none, e.g. one made with a key)' }),
});

export const SignInMethodsReq = z.strictObject({});
/** How people may sign in on this server: what the sign-in page offers. */
export const SignInMethodsRes = z.strictObject({
  password: z.boolean().meta({ description: 'username and password (false when LOUPE_PASSWORD_SIGN_IN=false)' }),
  single_sign_on: z.boolean().meta({ description: 'OpenID Connect single sign-on is configured: GET /auth/oidc/start begins it' }),
});

export const AcceptInvitationReq = z.strictObject({
  token: z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, 'token must be the one of the invitation link'),
  username: Username.optional().meta({ description: 'a new account; leave out (with password) to join with the signed-in account' }),
  password: Password.optional(),
});
export type AcceptInvitationReq = z.infer<typeof AcceptInvitationReq>;

export const InvitationState = z.enum(['pending', 'accepted', 'revoked', 'expired']);
export const Invitation = z
  .strictObject({
    id: z.string(),
    entity: z.string(),
    role: Role,
    email: z.string().nullable(),
    state: InvitationState,
    created_by: z.string(),
    created_at: Timestamp,
    expires_at: Timestamp,
    accepted_by: z.string().nullable(),
    accepted_at: Timestamp.nullable(),
    revoked_at: Timestamp.nullable(),
  })
  .meta({ id: 'Invitation' });
export type Invitation = z.infer<typeof Invitation>;

export const InvitationCreateReq = z.strictObject({
  entity: EntityName,
  role: Role,
  expires_in_hours: z.int().min(1).max(720).optional().meta({ description: 'default 168 (a week)' }),
  email: z.email().max(320).optional().meta({ description: 'whom it is for: a note for the admins, nothing is sent' }),
});
export type InvitationCreateReq = z.infer<typeof InvitationCreateReq>;
export const InvitationCreateRes = z.strictObject({
  invitation: Invitation.extend({ url: z.string().meta({ description: 'the link to accept it, holding the token: shown once, never again' }) }),
});

export const EntityReq = z.strictObject({ entity: EntityName });
export const InvitationsQueryRes = z.strictObject({ invitations: z.array(Invitation) });
export const InvitationRevokeReq = z.strictObject({ entity: EntityName, id: RecordId });
export const InvitationRes = z.strictObject({ invitation: Invitation });

export const Member = z
  .strictObject({
    user_id: z.string(),
    username: z.string(),
    role: Role,
    created_at: Timestamp,
    last_seen_at: Timestamp.nullable().meta({ description: 'the last sign-in or session activity (to the minute); null when never seen so' }),
  })
  .meta({ id: 'Member' });
export type Member = z.infer<typeof Member>;
export const MembersQueryRes = z.strictObject({ members: z.array(Member) });
export const MemberUpdateReq = z.strictObject({ entity: EntityName, user_id: UserId, role: Role });
export type MemberUpdateReq = z.infer<typeof MemberUpdateReq>;
export const MemberDeleteReq = z.strictObject({ entity: EntityName, user_id: UserId });
export type MemberDeleteReq = z.infer<typeof MemberDeleteReq>;
export const MemberRes = z.strictObject({ member: Member });

export const OwnApiKey = z
  .strictObject({ id: z.string(), name: z.string().nullable(), created_at: Timestamp })
  .meta({ id: 'OwnApiKey' });
export type OwnApiKey = z.infer<typeof OwnApiKey>;
export const OwnApiKeyCreateReq = z.strictObject({ name: z.string().min(1).max(100) });
export const OwnApiKeyCreateRes = z.strictObject({ api_key: OwnApiKey, key: z.string().meta({ description: 'the key itself: shown once, never again' }) });
export const OwnApiKeysQueryReq = z.strictObject({});
export const OwnApiKeysQueryRes = z.strictObject({ api_keys: z.array(OwnApiKey) });
export const OwnApiKeyDeleteReq = z.strictObject({ id: RecordId });
export const OwnApiKeyRes = z.strictObject({ api_key: OwnApiKey });

export const AUDIT_ACTIONS = [
  'sign_in', 'sign_in_failed', 'sign_out', 'password_set',
  'invitation_created', 'invitation_accepted', 'invitation_revoked',
  'member_role_changed', 'member_removed', 'api_key_created', 'api_key_revoked',
] as const;
export const AuditAction = z.enum(AUDIT_ACTIONS);
export type AuditAction = z.infer<typeof AuditAction>;
export const AuditEvent = z
  .strictObject({
    id: z.string(),
    action: AuditAction,
    actor_user_id: z.string().nullable().meta({ description: 'who did it; null for the admin tool and for a failed sign-in' }),
    actor_username: z.string().nullable(),
    subject_user_id: z.string().nullable().meta({ description: 'whom it was done to (a member changed or removed), when not the actor' }),
    detail: z.record(z.string(), z.unknown()).nullable(),
    client_address: z.string().nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'AuditEvent' });
export type AuditEvent = z.infer<typeof AuditEvent>;
export const AuditQueryReq = z.strictObject({ entity: EntityName, limit: Limit.optional(), cursor: Cursor.optional() });
export type AuditQueryReq = z.infer<typeof AuditQueryReq>;
export const AuditQueryRes = z.strictObject({ events: z.array(AuditEvent), next_cursor: NextCursor });
