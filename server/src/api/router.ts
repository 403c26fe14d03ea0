import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { annotationQueuesRouter } from './routers/annotation-queues.ts';
import { authRouter } from './routers/auth.ts';
import { entitiesRouter } from './routers/entities.ts';
import { annotationSpecsRouter } from './routers/annotation-specs.ts';
import { callsRouter } from './routers/calls.ts';
import { feedbackRouter } from './routers/feedback.ts';
import { meRouter } from './routers/me.ts';
import { modelsRouter } from './routers/models.ts';
import { projectsRouter } from './routers/projects.ts';
import { webhooksRouter } from './routers/webhooks.ts';
import { createCallerFactory, router } from './trpc.ts';

export const appRouter = router({
  annotationQueues: annotationQueuesRouter,
  annotationSpecs: annotationSpecsRouter,
  auth: authRouter,
  entities: entitiesRouter,
  calls: callsRouter,
  feedback: feedbackRouter,
  me: meRouter,
  models: modelsRouter,
  projects: projectsRouter,
  webhooks: webhooksRouter,
});

export const createCaller = createCallerFactory(appRouter);

export type AppRouter = typeof appRouter;
export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;
