import { ModelList, ModelListQuery } from '@loupe/shared';
import { filterModels } from '../../catalog/catalog.ts';
import { publicProcedure, router } from '../trpc.ts';
import { rest } from '../rest-meta.ts';

export const MODEL_LIST_PATH = '/inference/router/partner/models';

export const modelsRouter = router({
  list: publicProcedure
    .meta(
      rest({
        method: 'GET',
        path: MODEL_LIST_PATH,
        public: true,
        tags: ['models'],
        summary: 'List the models available through the partner router',
        description:
          'Public. Served with a strong ETag (If-None-Match answers 304), Cache-Control and CORS. ' +
          'Unknown query parameters are ignored; the optional filters narrow the list.',
        answers: [304],
      }),
    )
    .input(ModelListQuery)
    .output(ModelList)
    .query(({ ctx, input }) => ({ data: filterModels(ctx.services.catalog.snapshot.models, input) })),
});
