import { Me } from '@loupe/shared';
import { z } from 'zod';
import { protectedProcedure, router } from '../trpc.ts';
import { rest } from '../rest-meta.ts';

export const meRouter = router({
  read: protectedProcedure
    .meta(rest({ method: 'GET', path: '/me', tags: ['auth'], summary: 'The caller: user id, username and memberships' }))
    .input(z.strictObject({}))
    .output(Me)
    .query(({ ctx }) => ({
      user_id: ctx.user.id,
      username: ctx.user.username,
      memberships: [...ctx.user.roles].map(([entity, role]) => ({ entity, role })).sort((a, b) => a.entity.localeCompare(b.entity)),
    })),
});
