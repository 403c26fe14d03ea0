import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { apiClient, meQuery, statusOf } from './api.ts';
import { Models } from './Models.tsx';
import { Projects } from './Projects.tsx';
import { AgreementPage } from './pages/AgreementPage.tsx';
import { AnnotatePage } from './pages/AnnotatePage.tsx';
import { ProjectPage } from './pages/ProjectPage.tsx';
import { QueuePage } from './pages/QueuePage.tsx';
import { parseRoute, type Route } from './routes.ts';
import { Link, usePage } from './router.tsx';
import { signOut, useSession, type Session } from './session.ts';
import { SignIn } from './SignIn.tsx';

const PAGES = [
  { page: '', label: 'Projects' },
  { page: 'models', label: 'Models' },
] as const;

export function App() {
  const page = usePage();
  const route = parseRoute(page);
  const session = useSession();
  const queryClient = useQueryClient();
  const [notice, setNotice] = useState<string>();
  const leave = useCallback(
    (why?: string) => {
      signOut();
      // Nothing read with the key outlives it.
      queryClient.removeQueries({ queryKey: ['session'] });
      setNotice(why);
    },
    [queryClient],
  );
  useEffect(() => {
    if (session) setNotice(undefined);
  }, [session]);

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Loupe</span>
        <nav aria-label="Main">
          <ul>
            {PAGES.map((item) => (
              <li key={item.page}>
                <Link to={item.page} aria-current={page === item.page ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        {session ? <Account session={session} onSignOut={leave} /> : null}
      </header>
      <main id="main" tabIndex={-1}>
        {route.name === 'models' ? <Models /> : session ? <SignedIn session={session} route={route} onRefused={leave} /> : <SignIn notice={notice} />}
      </main>
    </>
  );
}

function Account({ session, onSignOut }: { session: NonNullable<Session>; onSignOut: () => void }) {
  const client = useMemo(() => apiClient(session.apiKey), [session]);
  const me = useQuery(meQuery(client, session.id));
  return (
    <div className="account">
      {me.data ? <span>Signed in as <strong>{me.data.username}</strong></span> : null}
      <button type="button" onClick={() => onSignOut()}>
        Sign out
      </button>
    </div>
  );
}

/** The signed-in pages; a key revoked meanwhile signs the tab out with a word why. */
function SignedIn({ session, route, onRefused }: { session: NonNullable<Session>; route: Route; onRefused: (why: string) => void }) {
  const client = useMemo(() => apiClient(session.apiKey), [session]);
  const me = useQuery(meQuery(client, session.id));
  const refused = me.isError && statusOf(me.error) === 401;
  useEffect(() => {
    if (refused) onRefused('Your API key is no longer accepted: sign in again.');
  }, [refused, onRefused]);
  const props = { client, session: session.id };
  switch (route.name) {
    case 'project':
      return <ProjectPage {...props} projectId={route.projectId} />;
    case 'queue':
      return <QueuePage {...props} projectId={route.projectId} queueId={route.queueId} />;
    case 'annotate':
      return <AnnotatePage {...props} projectId={route.projectId} queueId={route.queueId} />;
    case 'agreement':
      return <AgreementPage {...props} projectId={route.projectId} queueId={route.queueId} />;
    case 'not-found':
      return <NotFound />;
    default:
      return <Projects {...props} />;
  }
}

function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no such page. <Link to="">Go to your projects</Link>.
      </p>
    </>
  );
}
