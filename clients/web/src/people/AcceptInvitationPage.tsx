import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useId, useState, type FormEvent } from 'react';
import { useSessionOfLayout } from '../App.tsx';
import { apiClient, meQuery, messageOf, statusOf, type Me } from '../api.ts';
import { links } from '../routes.ts';
import { signedInWithCookie } from '../session.ts';
import './people.css';

/** The token of an invitation link `…/app/accept-invitation#token=<token>` (in the fragment, which never reaches a server). */
function tokenOfLocation(): string | null {
  const token = new URLSearchParams(window.location.hash.slice(1)).get('token');
  return token && /^[A-Za-z0-9_-]{1,256}$/.test(token) ? token : null;
}

/**
 * Accepting an invitation (contract 5.12): a new person chooses a username and a password; someone
 * signed in (with a session cookie) joins with that account. Either way the server starts a
 * session, and the app opens on the person's home (My queues for an annotator, else projects).
 * The link says nothing of the entity or role before it is used: only its token, which the
 * server does not read out to anyone who holds it.
 */
export function AcceptInvitationPage() {
  const [token] = useState(tokenOfLocation);
  const { session, checking } = useSessionOfLayout();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const cookieSession = session !== null && session.apiKey === undefined ? session : null;
  const me = useQuery({ ...meQuery(apiClient(), cookieSession?.id ?? 0), enabled: cookieSession !== null });

  const accept = useMutation({
    mutationFn: (input: { username?: string; password?: string }) => apiClient().auth.acceptInvitation.mutate({ token: token ?? '', ...input }),
    onSuccess: ({ user }) => {
      queryClient.removeQueries({ queryKey: ['session'] });
      const id = signedInWithCookie();
      queryClient.setQueryData(meQuery(apiClient(), id).queryKey, user);
      void navigate({ ...links.projects(), replace: true });
    },
  });

  return (
    <section className="panel narrow people-page" aria-labelledby="invitation-title">
      <h1 id="invitation-title">You are invited</h1>
      {token === null ? (
        <p className="error" role="alert">
          This invitation link is incomplete: open the whole link you were sent (it ends with <code>#token=…</code>).
        </p>
      ) : checking || (cookieSession && me.isPending) ? (
        <p role="status">Loading…</p>
      ) : cookieSession && me.data ? (
        <JoinWithAccount me={me.data} pending={accept.isPending} error={accept.isError ? messageOf(accept.error) : undefined} onJoin={() => accept.mutate({})} />
      ) : (
        <NewAccount
          pending={accept.isPending}
          error={accept.isError ? { status: statusOf(accept.error), message: messageOf(accept.error) } : undefined}
          onSubmit={(username, password) => accept.mutate({ username, password })}
        />
      )}
    </section>
  );
}

function JoinWithAccount({ me, pending, error, onJoin }: { me: Me; pending: boolean; error: string | undefined; onJoin: () => void }) {
  return (
    <>
      <p>You are signed in as <strong>{me.username}</strong>. The invitation adds this account to the entity with the invitation’s role.</p>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <button type="button" onClick={onJoin} disabled={pending}>
        Join with your account {me.username}
      </button>
      <p className="hint">To make a new account with this link instead, sign out first.</p>
    </>
  );
}

function NewAccount({ pending, error, onSubmit }: { pending: boolean; error: { status: number; message: string } | undefined; onSubmit: (username: string, password: string) => void }) {
  const id = useId();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (username.trim() && password) onSubmit(username.trim(), password);
  };
  // A taken name (409) is the username's fault; every other refusal (a weak password, a used,
  // expired or revoked invitation) is said under the form, in the server's words.
  const nameTaken = error?.status === 409;
  return (
    <form onSubmit={submit} noValidate>
      <p>Choose a username and a password for your new account. Already have an account here? Sign in first, then open the link again to join with it.</p>
      <label htmlFor={`${id}-username`}>Username</label>
      <input
        id={`${id}-username`}
        name="username"
        autoComplete="username"
        autoCapitalize="none"
        spellCheck={false}
        maxLength={128}
        required
        value={username}
        onChange={(event) => setUsername(event.target.value)}
        aria-invalid={nameTaken ? true : undefined}
        aria-describedby={`${id}-username-about${nameTaken ? ` ${id}-error` : ''}`}
      />
      <p id={`${id}-username-about`} className="field-about">
        Letters, digits, <code>.</code> <code>_</code> <code>-</code>; starting with a letter or digit.
      </p>
      <label htmlFor={`${id}-password`}>Password</label>
      <input
        id={`${id}-password`}
        name="new-password"
        type="password"
        autoComplete="new-password"
        required
        value={password}
        onChange={(event) => setPassword(event.target.value)}
        aria-describedby={`${id}-password-about`}
      />
      <p id={`${id}-password-about`} className="field-about">
        At least 12 characters, and not one of the most common passwords: a few words make a good one.
      </p>
      {error ? (
        <p id={`${id}-error`} className="error" role="alert">
          {error.message}
        </p>
      ) : null}
      <button type="submit" disabled={pending}>
        Create account and join
      </button>
    </form>
  );
}
