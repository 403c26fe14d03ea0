import {
  AuditQueryReq, AuditQueryRes, EntityReq, InvitationCreateReq, InvitationCreateRes, InvitationRes, InvitationRevokeReq, InvitationsQueryRes,
  MemberDeleteReq, MemberRes, MembersQueryRes, MemberUpdateReq,
} from '@loupe/shared';
import { createInvitation, queryInvitations, revokeInvitation } from '../../auth/invitations.ts';
import { queryMembers, removeMember, updateMemberRole } from '../../auth/members.ts';
import { queryAudit } from '../../domain/audit-log.ts';
import { resolvePaging } from '../../domain/paging.ts';
import { entityProcedure } from '../entity-procedures.ts';
import { rest } from '../rest-meta.ts';
import { actorOf, clientAddress, publicBaseUrl } from '../session-http.ts';
import { router } from '../trpc.ts';

const tags = ['people'];

export const entitiesRouter = router({
  invitations: router({
    create: entityProcedure('admin', InvitationCreateReq)
      .meta(rest({ method: 'POST', path: '/entities/{entity}/invitations', tags, summary: 'Invite someone to the entity with a role (admins); the link is shown once' }))
      .output(InvitationCreateRes)
      .mutation(async ({ ctx, input }) => ({
        invitation: await createInvitation(ctx.db, { req: input, actor: actorOf(ctx.user), client: clientAddress(ctx), baseUrl: publicBaseUrl(ctx) }),
      })),

    query: entityProcedure('admin', EntityReq)
      .meta(rest({ method: 'POST', path: '/entities/{entity}/invitations/query', tags, summary: "The entity's invitations, newest first (admins; no tokens)" }))
      .output(InvitationsQueryRes)
      .query(async ({ ctx, input }) => ({ invitations: await queryInvitations(ctx.db, input.entity) })),

    revoke: entityProcedure('admin', InvitationRevokeReq)
      .meta(rest({ method: 'DELETE', path: '/entities/{entity}/invitations/{id}', tags, summary: 'Revoke an invitation (admins)', answers: [404] }))
      .output(InvitationRes)
      .mutation(async ({ ctx, input }) => ({
        invitation: await revokeInvitation(ctx.db, { entity: input.entity, id: input.id, actor: actorOf(ctx.user), client: clientAddress(ctx) }),
      })),
  }),

  members: router({
    query: entityProcedure('member', EntityReq)
      .meta(rest({ method: 'POST', path: '/entities/{entity}/members/query', tags, summary: "The entity's members (any member; an annotator sees no other annotator)" }))
      .output(MembersQueryRes)
      .query(async ({ ctx, input }) => ({
        members: await queryMembers(ctx.db, { entity: input.entity, caller: { id: ctx.user.id, role: ctx.user.roles.get(input.entity)! } }),
      })),

    update: entityProcedure('admin', MemberUpdateReq)
      .meta(rest({ method: 'PUT', path: '/entities/{entity}/members/{user_id}', tags, summary: "Change a member's role (admins; the last admin stays one)", answers: [404] }))
      .output(MemberRes)
      .mutation(async ({ ctx, input }) => ({
        member: await updateMemberRole(ctx.db, { entity: input.entity, userId: input.user_id, role: input.role, actor: actorOf(ctx.user), client: clientAddress(ctx) }),
      })),

    remove: entityProcedure('admin', MemberDeleteReq)
      .meta(rest({ method: 'DELETE', path: '/entities/{entity}/members/{user_id}', tags, summary: 'Remove a member (admins; not the last admin)', answers: [404] }))
      .output(MemberRes)
      .mutation(async ({ ctx, input }) => ({
        member: await removeMember(ctx.db, { entity: input.entity, userId: input.user_id, actor: actorOf(ctx.user), client: clientAddress(ctx) }),
      })),
  }),

  audit: router({
    query: entityProcedure('admin', AuditQueryReq)
      .meta(rest({ method: 'POST', path: '/entities/{entity}/audit/query', tags, summary: "The entity's audit log, newest first (admins; paged by cursor)" }))
      .output(AuditQueryRes)
      .query(({ ctx, input }) => queryAudit(ctx.db, { req: input, page: resolvePaging(input, ctx.pageLimits) })),
  }),
});
