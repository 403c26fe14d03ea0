import { AcceptInvitationReq, SignInMethodsReq, SignInMethodsRes, SignInReq, SignInRes, SignOutReq, SignOutRes } from '@loupe/shared';
import { cookieUser } from '../../auth/cookie-session.ts';
import { acceptInvitation } from '../../auth/invitations.ts';
import { sessionTokenOf } from '../../auth/session-tokens.ts';
import { endSession } from '../../auth/sessions.ts';
import { signIn } from '../../auth/sign-in.ts';
import { entitiesOfUser, recordAudit } from '../../domain/audit-log.ts';
import { rest } from '../rest-meta.ts';
import { actorOf, clearSessionCookie, clientAddress, requestOfContext, setSessionCookie } from '../session-http.ts';
import { protectedProcedure, publicProcedure, router } from '../trpc.ts';

const tags = ['auth'];

export const authRouter = router({
  methods: publicProcedure
    .meta(rest({ method: 'GET', path: '/auth/methods', tags, public: true, summary: 'How people may sign in here: password, single sign-on' }))
    .input(SignInMethodsReq)
    .output(SignInMethodsRes)
    .query(({ ctx }) => ({ password: ctx.services.config.people.passwordSignIn, single_sign_on: ctx.services.config.people.oidc !== undefined })),

  signIn: publicProcedure
    .meta(rest({
      method: 'POST', path: '/auth/sign-in', tags, public: true, answers: [401, 403, 429],
      summary: 'Sign in with a password: the user, and a session cookie (loupe_session)',
      description: 'A wrong password and an unknown username get the same 401. Failures are braked per client and per username (429). 403 when password sign-in is turned off (LOUPE_PASSWORD_SIGN_IN=false).',
    }))
    .input(SignInReq)
    .output(SignInRes)
    .mutation(async ({ ctx, input }) => {
      const { user, ...session } = await signIn(ctx.db, { req: input, client: clientAddress(ctx), settings: ctx.services.config.people, brake: ctx.services.authFailures });
      // A session the request carried (perhaps planted) ends: the new one has a new token.
      const previous = sessionTokenOf(requestOfContext(ctx).headers.cookie);
      if (previous !== null) await endSession(ctx.db, previous);
      setSessionCookie(ctx, session);
      return { user };
    }),

  signOut: protectedProcedure
    .meta(rest({ method: 'POST', path: '/auth/sign-out', tags, summary: 'End the session of the cookie on the server' }))
    .input(SignOutReq)
    .output(SignOutRes)
    .mutation(async ({ ctx }) => {
      if (ctx.user.via !== 'session') return { signed_out: false };
      const token = sessionTokenOf(requestOfContext(ctx).headers.cookie);
      const ended = token !== null && (await endSession(ctx.db, token));
      if (ended) await recordAudit(ctx.db, await entitiesOfUser(ctx.db, ctx.user.id), { action: 'sign_out', actor: actorOf(ctx.user), client: clientAddress(ctx) });
      clearSessionCookie(ctx);
      return { signed_out: ended };
    }),

  acceptInvitation: publicProcedure
    .meta(rest({
      method: 'POST', path: '/auth/accept-invitation', tags, public: true, answers: [403, 409],
      summary: 'Accept an invitation: a new account (username and password), or the signed-in one; starts a session',
      description: 'An invitation is used once; a used, expired or revoked one → 400 saying which.',
    }))
    .input(AcceptInvitationReq)
    .output(SignInRes)
    .mutation(async ({ ctx, input }) => {
      const req = requestOfContext(ctx);
      // Joining with the signed-in account is a write with the cookie: cross-site is refused (403).
      const signedIn = input.username === undefined && input.password === undefined ? await cookieUser(ctx.db, req, ctx.services.config.people) : undefined;
      const { user, ...session } = await acceptInvitation(ctx.db, {
        req: input,
        signedIn: signedIn ?? null,
        client: clientAddress(ctx),
        settings: ctx.services.config.people,
      });
      const previous = sessionTokenOf(req.headers.cookie);
      if (previous !== null) await endSession(ctx.db, previous);
      setSessionCookie(ctx, session);
      return { user };
    }),
});
