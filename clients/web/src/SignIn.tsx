import { useMutation } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { apiClient, messageOf, statusOf } from './api.ts';
import { signIn } from './session.ts';

/** The API key is checked against the server (`me.read`) before it is kept for the tab. */
export function SignIn({ notice }: { notice?: string | undefined }) {
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
    <section className="panel narrow" aria-labelledby={`${fieldId}-title`}>
      <h1 id={`${fieldId}-title`}>Sign in</h1>
      {notice ? <p role="status">{notice}</p> : null}
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
        An administrator makes keys with <code>npm run admin -- users create &lt;name&gt; --entity &lt;entity&gt;</code>. The key is kept for this tab only.
      </p>
    </section>
  );
}
