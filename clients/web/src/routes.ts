import { createRootRoute, createRoute, linkOptions } from '@tanstack/react-router';

// The app's pages under /app/ (the server answers index.html for every page path), as TanStack
// Router's route tree; router.tsx gives each its component. Paths only here, so that tests can
// match paths against the same tree without rendering anything.
//
//   /                                              projects (an annotator is sent on to My queues)
//   /mine                                          My queues: every queue the caller may claim from
//   /models                                        the model catalog (public)
//   /accept-invitation#token=<token>               accepting an invitation (public; the token in the fragment)
//   /keys                                          the caller's own API keys
//   /e/<entity>/members                            an entity's members and invitations (its admins)
//   /p/<entity>/<project>                          a project: its queues, specs and calls
//   /p/<entity>/<project>/webhooks                 its webhooks and their deliveries
//   /p/<entity>/<project>/q/<queue_id>             a queue: progress, items
//   /p/<entity>/<project>/q/<queue_id>/annotate    annotating the queue
//   /p/<entity>/<project>/q/<queue_id>/agreement   agreement between its annotators
//
// Every page but the model catalog and the invitation is behind the sign-in (the pathless `signed-in` route).

export const rootRoute = createRootRoute();
export const modelsRoute = createRoute({ getParentRoute: () => rootRoute, path: 'models' });
export const acceptInvitationRoute = createRoute({ getParentRoute: () => rootRoute, path: 'accept-invitation' });
export const signedInRoute = createRoute({ getParentRoute: () => rootRoute, id: 'signed-in' });
export const projectsRoute = createRoute({ getParentRoute: () => signedInRoute, path: '/' });
export const mineRoute = createRoute({ getParentRoute: () => signedInRoute, path: 'mine' });
export const keysRoute = createRoute({ getParentRoute: () => signedInRoute, path: 'keys' });
export const membersRoute = createRoute({ getParentRoute: () => signedInRoute, path: 'e/$entity/members' });
export const projectRoute = createRoute({ getParentRoute: () => signedInRoute, path: 'p/$entity/$project' });
export const webhooksRoute = createRoute({ getParentRoute: () => signedInRoute, path: 'p/$entity/$project/webhooks' });
export const queueRoute = createRoute({ getParentRoute: () => signedInRoute, path: 'p/$entity/$project/q/$queueId' });
export const queueIndexRoute = createRoute({ getParentRoute: () => queueRoute, path: '/' });
export const annotateRoute = createRoute({ getParentRoute: () => queueRoute, path: 'annotate' });
export const agreementRoute = createRoute({ getParentRoute: () => queueRoute, path: 'agreement' });

export const routeTree = rootRoute.addChildren([
  modelsRoute,
  acceptInvitationRoute,
  signedInRoute.addChildren([projectsRoute, mineRoute, keysRoute, membersRoute, projectRoute, webhooksRoute, queueRoute.addChildren([queueIndexRoute, annotateRoute, agreementRoute])]),
]);

/** Every page by name; a path that matches none of them shows "Page not found". */
export const pageRoutes = {
  projects: projectsRoute,
  mine: mineRoute,
  models: modelsRoute,
  'accept-invitation': acceptInvitationRoute,
  keys: keysRoute,
  members: membersRoute,
  project: projectRoute,
  webhooks: webhooksRoute,
  queue: queueIndexRoute,
  annotate: annotateRoute,
  agreement: agreementRoute,
};
export type PageName = keyof typeof pageRoutes | 'not-found';

/** A project id `<entity>/<project>` as the routes' two path parameters. */
export function projectParams(projectId: string): { entity: string; project: string } {
  const slash = projectId.indexOf('/');
  return { entity: projectId.slice(0, slash), project: projectId.slice(slash + 1) };
}

// Links to the pages, typed by the route tree: a path or a parameter that no route has does not
// compile. A link marks itself as the current page (aria-current) only on that page, not on the
// pages under it.
const exact = { exact: true } as const;

export const links = {
  projects: () => linkOptions({ to: '/', activeOptions: exact }),
  mine: () => linkOptions({ to: '/mine', activeOptions: exact }),
  models: () => linkOptions({ to: '/models', activeOptions: exact }),
  keys: () => linkOptions({ to: '/keys', activeOptions: exact }),
  members: (entity: string) => linkOptions({ to: '/e/$entity/members', params: { entity }, activeOptions: exact }),
  project: (projectId: string) => linkOptions({ to: '/p/$entity/$project', params: projectParams(projectId), activeOptions: exact }),
  webhooks: (projectId: string) => linkOptions({ to: '/p/$entity/$project/webhooks', params: projectParams(projectId), activeOptions: exact }),
  queue: (projectId: string, queueId: string) =>
    linkOptions({ to: '/p/$entity/$project/q/$queueId', params: { ...projectParams(projectId), queueId }, activeOptions: exact }),
  annotate: (projectId: string, queueId: string) =>
    linkOptions({ to: '/p/$entity/$project/q/$queueId/annotate', params: { ...projectParams(projectId), queueId }, activeOptions: exact }),
  agreement: (projectId: string, queueId: string) =>
    linkOptions({ to: '/p/$entity/$project/q/$queueId/agreement', params: { ...projectParams(projectId), queueId }, activeOptions: exact }),
};
