import { useSyncExternalStore } from 'react';

// Who this tab acts for. Two kinds of session:
// - an API key, kept in this tab's sessionStorage only: never in a URL, a query key or a log;
// - a session cookie (`loupe_session`, HttpOnly: the page never sees it), set by a password or
//   single sign-on sign-in or an accepted invitation. No key is kept in the browser for it.
//
// The page cannot read an HttpOnly cookie, so it cannot tell by itself whether one is set. A mark
// in localStorage (no secret: just "a cookie session was begun in this browser") makes the app ask
// `me.read` with the cookie on load; without the mark it shows the sign-in at once, and a visitor
// who never signed in is not sent a request that can only be refused (a 401 in the console).
const KEY_STORAGE = 'loupe.apiKey';
const COOKIE_MARK = 'loupe.cookieSession';

/** A signed-in session: the key for a key session, none for a cookie one; `id` keys its queries. */
export type Session = { apiKey: string | undefined; id: number } | null;
/** The session, and whether the app is still asking the server about a cookie session. */
export type SessionState = { session: Session; checking: boolean };

let nextId = 1;
let keySession: Session = null;
let cookieSession: Session = null;
let checking = readMark();
let snapshot: SessionState = { session: null, checking };
const listeners = new Set<() => void>();

function readMark(): boolean {
  try {
    return localStorage.getItem(COOKIE_MARK) === '1';
  } catch {
    return false; // storage refused (a privacy setting): the sign-in shows
  }
}

function read(): SessionState {
  const apiKey = sessionStorage.getItem(KEY_STORAGE);
  let session: Session;
  if (apiKey) {
    if (keySession?.apiKey !== apiKey) keySession = { apiKey, id: nextId++ };
    session = keySession;
  } else {
    session = cookieSession;
  }
  const stillChecking = !apiKey && checking;
  if (snapshot.session !== session || snapshot.checking !== stillChecking) snapshot = { session, checking: stillChecking };
  return snapshot;
}

function changed(): void {
  for (const listener of listeners) listener();
}

/** Signs the tab in with an API key (checked against the server first). */
export function signIn(apiKey: string): void {
  sessionStorage.setItem(KEY_STORAGE, apiKey);
  changed();
}

/** The server set a session cookie (or confirmed one): the tab acts with it. Returns the session id. */
export function signedInWithCookie(): number {
  sessionStorage.removeItem(KEY_STORAGE);
  try {
    localStorage.setItem(COOKIE_MARK, '1');
  } catch {
    // Without storage the session still holds for this page; a reload shows the sign-in.
  }
  cookieSession = { apiKey: undefined, id: nextId++ };
  checking = false;
  changed();
  return cookieSession.id;
}

/** About to leave for single sign-on: the page it comes back to asks about the cookie. */
export function expectCookieSession(): void {
  try {
    localStorage.setItem(COOKIE_MARK, '1');
  } catch {
    // As above.
  }
}

let lastKind: 'key' | 'cookie' | undefined;

/** How the tab was last signed in, until the page is left: its sign-in offers the same way again. */
export function lastSignedInWith(): 'key' | 'cookie' | undefined {
  return lastKind;
}

/** Forgets the session of the tab (the caller ends a cookie session on the server first). */
export function signOut(): void {
  const apiKey = sessionStorage.getItem(KEY_STORAGE);
  if (apiKey || cookieSession) lastKind = apiKey ? 'key' : 'cookie';
  sessionStorage.removeItem(KEY_STORAGE);
  try {
    localStorage.removeItem(COOKIE_MARK);
  } catch {
    // Nothing kept.
  }
  keySession = null;
  cookieSession = null;
  checking = false;
  changed();
}

export function useSessionState(): SessionState {
  return useSyncExternalStore((listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, read);
}

export function useSession(): Session {
  return useSessionState().session;
}
