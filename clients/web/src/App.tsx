import type { LoupeClient } from '@loupe/client';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, Outlet } from '@tanstack/react-router';
import { createContext, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { annotatorOnly } from './access.ts';
import { apiClient, meQuery, statusOf } from './api.ts';
import { links } from './routes.ts';
import { signOut, useSession, type Session } from './session.ts';
import { SignIn } from './SignIn.tsx';

/** What the signed-in pages share: the session's typed client and its id (the key of its queries). */
type SignedIn = { client: LoupeClient; session: number };

/** The tab's session as the layout holds it: signed in or not, and why it was last left. */
type SessionState = { session: Session; notice: string | undefined; leave: (why?: string) => void };

const SessionContext = createContext<SessionState | null>(null);
const SignedInContext = createContext<SignedIn | null>(null);

/** The signed-in session of a page under the `signed-in` route. */
export function useSignedIn(): SignedIn {
  const signedIn = useContext(SignedInContext);
  if (!signedIn) throw new Error('useSignedIn is for pages under the signed-in route');
  return signedIn;
}

/** The frame of every page: the skip link, the main navigation, the account, and the page. */
export function App() {
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
  const state = useMemo(() => ({ session, notice, leave }), [session, notice, leave]);

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Loupe</span>
        <MainNav session={session} />
        {session ? <Account session={session} onSignOut={leave} /> : null}
      </header>
      <main id="main" tabIndex={-1}>
        <SessionContext.Provider value={state}>
          <Outlet />
        </SessionContext.Provider>
      </main>
    </>
  );
}

/**
 * The main navigation: My queues for everyone signed in, Projects for all but annotators (whose
 * home My queues is), and the public model catalog.
 */
function MainNav({ session }: { session: Session }) {
  const client = useMemo(() => apiClient(session?.apiKey), [session]);
  const me = useQuery({ ...meQuery(client, session?.id ?? 0), enabled: session !== null });
  return (
    <nav aria-label="Main">
      <ul>
        {session ? (
          <li>
            <Link {...links.mine()}>My queues</Link>
          </li>
        ) : null}
        {session && annotatorOnly(me.data) ? null : (
          <li>
            <Link {...links.projects()}>Projects</Link>
          </li>
        )}
        <li>
          <Link {...links.models()}>Models</Link>
        </li>
      </ul>
    </nav>
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

/** The pages behind the sign-in: the sign-in form until there is a session. */
export function SignedInPages() {
  const { session, notice, leave } = useContext(SessionContext)!;
  return session ? <SignedInSession session={session} onRefused={leave} /> : <SignIn notice={notice} />;
}

/** A signed-in page; a key revoked meanwhile signs the tab out with a word why. */
function SignedInSession({ session, onRefused }: { session: NonNullable<Session>; onRefused: (why: string) => void }) {
  const client = useMemo(() => apiClient(session.apiKey), [session]);
  const me = useQuery(meQuery(client, session.id));
  const refused = me.isError && statusOf(me.error) === 401;
  useEffect(() => {
    if (refused) onRefused('Your API key is no longer accepted: sign in again.');
  }, [refused, onRefused]);
  const signedIn = useMemo(() => ({ client, session: session.id }), [client, session.id]);
  return (
    <SignedInContext.Provider value={signedIn}>
      <Outlet />
    </SignedInContext.Provider>
  );
}

export function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no such page. <Link {...links.projects()}>Go to your projects</Link>.
      </p>
    </>
  );
}
