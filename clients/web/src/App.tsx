import type { LoupeClient } from '@loupe/client';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, Outlet } from '@tanstack/react-router';
import { createContext, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { annotatorOnly } from './access.ts';
import { apiClient, meQuery, statusOf } from './api.ts';
import { links } from './routes.ts';
import { signedInWithCookie, signOut, useSessionState, type Session } from './session.ts';
import { SignIn } from './SignIn.tsx';

/** What the signed-in pages share: the session's typed client and its id (the key of its queries). */
type SignedIn = { client: LoupeClient; session: number };

/** The tab's session as the layout holds it: signed in or not (or not known yet), and why it was last left. */
type SessionState = { session: Session; checking: boolean; notice: string | undefined; leave: (why?: string) => void };

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
  const { session, checking } = useSessionState();
  const queryClient = useQueryClient();
  const [notice, setNotice] = useState<string>();
  const leave = useCallback(
    (why?: string) => {
      signOut();
      // Nothing read in the session outlives it.
      queryClient.removeQueries({ queryKey: ['session'] });
      setNotice(why);
    },
    [queryClient],
  );
  useEffect(() => {
    if (session) setNotice(undefined);
  }, [session]);
  useCookieCheck(checking);
  const state = useMemo(() => ({ session, checking, notice, leave }), [session, checking, notice, leave]);

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
 * On load, when a cookie session was begun in this browser: `me.read` with the cookie says
 * whether it still holds (then the tab is signed in with it, its answer already read) or not.
 */
function useCookieCheck(checking: boolean): void {
  const queryClient = useQueryClient();
  useEffect(() => {
    if (!checking) return;
    let current = true;
    apiClient()
      .me.read.query({})
      .then(
        (me) => {
          if (!current) return;
          const id = signedInWithCookie();
          queryClient.setQueryData(meQuery(apiClient(), id).queryKey, me);
        },
        () => {
          // Ended, expired or unreachable: the sign-in shows (a cookie, if any, is left to expire).
          if (current) signOut();
        },
      );
    return () => {
      current = false;
    };
  }, [checking, queryClient]);
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

/** Who is signed in, their API keys, and the sign-out: a cookie session is ended on the server, a key is forgotten. */
function Account({ session, onSignOut }: { session: NonNullable<Session>; onSignOut: () => void }) {
  const client = useMemo(() => apiClient(session.apiKey), [session]);
  const me = useQuery(meQuery(client, session.id));
  const [leaving, setLeaving] = useState(false);
  const signOutNow = async () => {
    if (session.apiKey === undefined) {
      setLeaving(true);
      // Signed out here whatever the answer: a session the server cannot end now expires on its own.
      await client.auth.signOut.mutate({}).catch(() => undefined);
      setLeaving(false);
    }
    onSignOut();
  };
  return (
    <div className="account">
      {me.data ? <span>Signed in as <strong>{me.data.username}</strong></span> : null}
      <Link {...links.keys()}>API keys</Link>
      <button type="button" onClick={() => void signOutNow()} disabled={leaving}>
        Sign out
      </button>
    </div>
  );
}

/** The pages behind the sign-in: the sign-in form until there is a session. */
export function SignedInPages() {
  const { session, checking, notice, leave } = useContext(SessionContext)!;
  if (checking) return <p role="status">Loading…</p>;
  return session ? <SignedInSession session={session} onRefused={leave} /> : <SignIn notice={notice} />;
}

/** The tab's session, for the public pages that act differently for someone signed in. */
export function useSessionOfLayout(): Pick<SessionState, 'session' | 'checking'> {
  const { session, checking } = useContext(SessionContext)!;
  return { session, checking };
}

/** A signed-in page; a key revoked or a session ended meanwhile signs the tab out with a word why. */
function SignedInSession({ session, onRefused }: { session: NonNullable<Session>; onRefused: (why: string) => void }) {
  const client = useMemo(() => apiClient(session.apiKey), [session]);
  const me = useQuery(meQuery(client, session.id));
  const refused = me.isError && statusOf(me.error) === 401;
  useEffect(() => {
    if (refused) onRefused(session.apiKey !== undefined ? 'Your API key is no longer accepted: sign in again.' : 'Your session has ended: sign in again.');
  }, [refused, onRefused, session.apiKey]);
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
