import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { apiClient, meQuery, statusOf } from './api.ts';
import { Models } from './Models.tsx';
import { Projects } from './Projects.tsx';
import { Link, usePage } from './router.tsx';
import { signOut, useSession, type Session } from './session.ts';
import { SignIn } from './SignIn.tsx';

const PAGES = [
  { page: '', label: 'Projects' },
  { page: 'models', label: 'Models' },
] as const;

export function App() {
  const page = usePage();
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
        {page === 'models' ? <Models /> : session ? <SignedIn session={session} onRefused={leave} /> : <SignIn notice={notice} />}
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
function SignedIn({ session, onRefused }: { session: NonNullable<Session>; onRefused: (why: string) => void }) {
  const client = useMemo(() => apiClient(session.apiKey), [session]);
  const me = useQuery(meQuery(client, session.id));
  const refused = me.isError && statusOf(me.error) === 401;
  useEffect(() => {
    if (refused) onRefused('Your API key is no longer accepted: sign in again.');
  }, [refused, onRefused]);
  return <Projects client={client} session={session.id} />;
}
