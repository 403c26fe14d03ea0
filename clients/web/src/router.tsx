import { createRouter } from '@tanstack/react-router';
import { App, NotFound, SignedInPages, useSignedIn } from './App.tsx';
import { Models } from './Models.tsx';
import { Projects } from './Projects.tsx';
import { AgreementPage } from './pages/AgreementPage.tsx';
import { AnnotatePage } from './pages/AnnotatePage.tsx';
import { MyQueuesPage } from './pages/MyQueuesPage.tsx';
import { ProjectPage } from './pages/ProjectPage.tsx';
import { QueuePage } from './pages/QueuePage.tsx';
import { WebhooksPage } from './pages/WebhooksPage.tsx';
import { AcceptInvitationPage } from './people/AcceptInvitationPage.tsx';
import { KeysPage } from './people/KeysPage.tsx';
import { MembersPage } from './people/MembersPage.tsx';
import {
  acceptInvitationRoute,
  agreementRoute,
  keysRoute,
  membersRoute,
  annotateRoute,
  mineRoute,
  modelsRoute,
  projectRoute,
  projectsRoute,
  queueIndexRoute,
  queueRoute,
  rootRoute,
  routeTree,
  signedInRoute,
  webhooksRoute,
} from './routes.ts';

// Each route of routes.ts with the component that renders it.

/** The project and queue a queue's page is about. */
function useQueueParams(): { projectId: string; queueId: string } {
  const { entity, project, queueId } = queueRoute.useParams();
  return { projectId: `${entity}/${project}`, queueId };
}

rootRoute.update({ component: App, notFoundComponent: NotFound });
modelsRoute.update({ component: Models });
signedInRoute.update({ component: SignedInPages });
acceptInvitationRoute.update({ component: AcceptInvitationPage });
keysRoute.update({
  component: function KeysRoute() {
    return <KeysPage {...useSignedIn()} />;
  },
});
membersRoute.update({
  component: function MembersRoute() {
    const { entity } = membersRoute.useParams();
    return <MembersPage {...useSignedIn()} entity={entity} />;
  },
});
projectsRoute.update({
  component: function ProjectsRoute() {
    return <Projects {...useSignedIn()} />;
  },
});
mineRoute.update({
  component: function MineRoute() {
    return <MyQueuesPage {...useSignedIn()} />;
  },
});
projectRoute.update({
  component: function ProjectRoute() {
    const { entity, project } = projectRoute.useParams();
    return <ProjectPage {...useSignedIn()} projectId={`${entity}/${project}`} />;
  },
});
webhooksRoute.update({
  component: function WebhooksRoute() {
    const { entity, project } = webhooksRoute.useParams();
    return <WebhooksPage {...useSignedIn()} projectId={`${entity}/${project}`} />;
  },
});
queueIndexRoute.update({
  component: function QueueRoute() {
    return <QueuePage {...useSignedIn()} {...useQueueParams()} />;
  },
});
annotateRoute.update({
  component: function AnnotateRoute() {
    return <AnnotatePage {...useSignedIn()} {...useQueueParams()} />;
  },
});
agreementRoute.update({
  component: function AgreementRoute() {
    return <AgreementPage {...useSignedIn()} {...useQueueParams()} />;
  },
});

export const router = createRouter({ routeTree, basepath: '/app' });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
