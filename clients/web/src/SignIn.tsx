import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { apiClient, meQuery, messageOf, signInMethodsQuery, statusOf } from './api.ts';
import { expectCookieSession, lastSignedInWith, signedInWithCookie, signIn } from './session.ts';

type Way = 'password' | 'key';

/**
 * The sign-in: username and password (when the server allows it), single sign-on (when it is
 * configured: a link to the server's route, which comes back with the session cookie), or an
 * API key. One form shows at a time, the password's first.
 */
export function SignIn({ notice }: { notice?: string | undefined }) {
  const id = useId();
  const methods = useQuery(signInMethodsQuery());
  // After a sign-out (or a refused key) the way the tab was signed in shows again.
  const [chosen, setChosen] = useState<Way | undefined>(() => (lastSignedInWith() === 'key' ? 'key' : undefined));
  // Until the server says, and when it cannot be asked, the key form (which always works) waits behind the choice.
  const password = methods.data?.password ?? false;
  const keysOnly = methods.data !== undefined && !methods.data.password && !methods.data.single_sign_on;
  const way: Way | undefined = chosen ?? (password ? 'password' : keysOnly ? 'key' : undefined);
  return (
    <section className="panel narrow sign-in" aria-labelledby={`${id}-title`}>
      <h1 id={`${id}-title`}>Sign in</h1>
      {notice ? <p role="status">{notice}</p> : null}
      {methods.isPending ? <p>Loading…</p> : null}
      {methods.isError ? <p className="error">{messageOf(methods.error)}</p> : null}
      {way === 'password' ? <PasswordForm /> : way === 'key' ? <KeyForm /> : null}
      {methods.data?.single_sign_on ? (
        <p className="sso">
          <a className="button-link" href="/auth/oidc/start" onClick={expectCookieSession}>
            Sign in with single sign-on
          </a>
        </p>
      ) : null}
      {methods.isPending ? null : way === 'key' ? (
        password ? (
          <button type="button" className="link-button" onClick={() => setChosen('password')}>
            Use your username and password instead
          </button>
        ) : null
      ) : (
        <button type="button" className="link-button" onClick={() => setChosen('key')}>
          Use an API key instead
        </button>
      )}
      {keysOnly ? <p className="hint">This server signs people in with API keys only.</p> : null}
    </section>
  );
}

/** Username and password: the server sets the session cookie; nothing is kept by the page. */
function PasswordForm() {
  const id = useId();
  const queryClient = useQueryClient();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const send = useMutation({
    mutationFn: (input: { username: string; password: string }) => apiClient().auth.signIn.mutate(input),
    onSuccess: ({ user }) => {
      const session = signedInWithCookie();
      queryClient.setQueryData(meQuery(apiClient(), session).queryKey, user);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (username.trim() && password) send.mutate({ username: username.trim(), password });
  };
  const error = send.isError ? (statusOf(send.error) === 401 ? 'Wrong username or password.' : messageOf(send.error)) : undefined;
  const invalid = error ? { 'aria-invalid': true, 'aria-describedby': `${id}-error` } : {};
  return (
    <form onSubmit={submit} noValidate>
      <label htmlFor={`${id}-username`}>Username</label>
      <input id={`${id}-username`} name="username" autoComplete="username" autoCapitalize="none" spellCheck={false} required value={username} onChange={(event) => setUsername(event.target.value)} {...invalid} />
      <label htmlFor={`${id}-password`}>Password</label>
      <input id={`${id}-password`} name="password" type="password" autoComplete="current-password" required value={password} onChange={(event) => setPassword(event.target.value)} {...invalid} />
      {error ? (
        <p id={`${id}-error`} className="error" role="alert">
          {error}
        </p>
      ) : null}
      <button type="submit" disabled={send.isPending}>
        Sign in
      </button>
    </form>
  );
}

/** The API key is checked against the server (`me.read`) before it is kept for the tab. */
function KeyForm() {
  const [apiKey, setApiKey] = useState('');
  const fieldId = useId();
  const errorId = useId();
  const check = useMutation({
    mutationFn: (key: string) => apiClient(key).me.read.query({}),
    onSuccess: (_me, key) => signIn(key),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const key = apiKey.trim();
    if (key) check.mutate(key);
  };
  const error = check.isError
    ? statusOf(check.error) === 401
      ? 'That API key was not accepted: it is unknown or revoked. Check it and try again.'
      : messageOf(check.error)
    : undefined;
  return (
    <>
      <form onSubmit={submit} noValidate>
        <label htmlFor={fieldId}>API key</label>
        <input
          id={fieldId}
          name="api-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          required
          value={apiKey}
          onChange={(event) => setApiKey(event.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? errorId : undefined}
        />
        {error ? (
          <p id={errorId} className="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={check.isPending}>
          Sign in
        </button>
      </form>
      <p className="hint">
        The key is kept for this tab only. Signed in, you make keys of your own on the API keys page; an administrator makes them with{' '}
        <code>npm run admin -- users create &lt;name&gt; --entity &lt;entity&gt;</code>.
      </p>
    </>
  );
}
