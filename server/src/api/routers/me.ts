import { Me, OwnApiKeyCreateReq, OwnApiKeyCreateRes, OwnApiKeyDeleteReq, OwnApiKeyRes, OwnApiKeysQueryReq, OwnApiKeysQueryRes } from '@loupe/shared';
import { z } from 'zod';
import { createOwnApiKey, queryOwnApiKeys, revokeOwnApiKey } from '../../auth/own-api-keys.ts';
import { protectedProcedure, router } from '../trpc.ts';
import { rest } from '../rest-meta.ts';
import { actorOf, clientAddress } from '../session-http.ts';

const tags = ['auth'];

export const meRouter = router({
  read: protectedProcedure
    .meta(rest({ method: 'GET', path: '/me', tags, summary: 'The caller: user id, username and memberships' }))
    .input(z.strictObject({}))
    .output(Me)
    .query(({ ctx }) => ({
      user_id: ctx.user.id,
      username: ctx.user.username,
      memberships: [...ctx.user.roles].map(([entity, role]) => ({ entity, role })).sort((a, b) => a.entity.localeCompare(b.entity)),
    })),

  apiKeys: router({
    create: protectedProcedure
      .meta(rest({ method: 'POST', path: '/me/api-keys', tags, summary: 'Make an API key of your own; the key is shown once' }))
      .input(OwnApiKeyCreateReq)
      .output(OwnApiKeyCreateRes)
      .mutation(({ ctx, input }) => createOwnApiKey(ctx.db, { name: input.name, actor: actorOf(ctx.user), client: clientAddress(ctx) })),

    query: protectedProcedure
      .meta(rest({ method: 'POST', path: '/me/api-keys/query', tags, summary: 'Your live API keys (never the keys themselves)' }))
      .input(OwnApiKeysQueryReq)
      .output(OwnApiKeysQueryRes)
      .query(async ({ ctx }) => ({ api_keys: await queryOwnApiKeys(ctx.db, ctx.user.id) })),

    revoke: protectedProcedure
      .meta(rest({ method: 'DELETE', path: '/me/api-keys/{id}', tags, summary: 'Revoke one of your API keys, at once', answers: [404] }))
      .input(OwnApiKeyDeleteReq)
      .output(OwnApiKeyRes)
      .mutation(async ({ ctx, input }) => ({ api_key: await revokeOwnApiKey(ctx.db, { id: input.id, actor: actorOf(ctx.user), client: clientAddress(ctx) }) })),
  }),
});
