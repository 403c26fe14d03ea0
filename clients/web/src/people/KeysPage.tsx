import type { LoupeClient } from '@loupe/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { messageOf } from '../api.ts';
import { ScrollTable } from '../queue/ScrollTable.tsx';
import { ConfirmDelete } from '../project/ConfirmDelete.tsx';
import { ownKeysQuery, shownTime, type OwnApiKey } from './people-queries.ts';
import { ShownOnce } from '../ShownOnce.tsx';
import './people.css';

/**
 * The caller's own API keys (contract 5.12): make one with a name (the key is shown once), see
 * the live ones (never the keys themselves), revoke one (after a confirmation). A key acts as its
 * owner with the owner's roles, for programs: the SDK, the CLI, scripts.
 */
export function KeysPage({ client, session }: { client: LoupeClient; session: number }) {
  const id = useId();
  const queryClient = useQueryClient();
  const keys = useQuery(ownKeysQuery(client, session));
  const [name, setName] = useState('');
  const [made, setMade] = useState<{ name: string; key: string }>();
  const [revoking, setRevoking] = useState<OwnApiKey>();
  const refresh = () => queryClient.invalidateQueries({ queryKey: ownKeysQuery(client, session).queryKey });

  const create = useMutation({
    mutationFn: (keyName: string) => client.me.apiKeys.create.mutate({ name: keyName }),
    onSuccess: (answer) => {
      setMade({ name: answer.api_key.name ?? '', key: answer.key });
      setName('');
      void refresh();
    },
  });
  const revoke = useMutation({
    mutationFn: (keyId: string) => client.me.apiKeys.revoke.mutate({ id: keyId }),
    onSuccess: () => {
      setRevoking(undefined);
      void refresh();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (name.trim()) create.mutate(name.trim());
  };
  const createError = create.isError ? messageOf(create.error) : undefined;

  return (
    <div className="people-page">
      <h1>API keys</h1>
      <p className="lede">A key lets a program (the SDK, the command line, a script) act as you, with your roles in every entity. Revoke a key you no longer use.</p>

      {made ? (
        <ShownOnce
          title={`Your new API key “${made.name}”`}
          label="API key"
          value={made.key}
          onDone={() => setMade(undefined)}
        >
          <p>
            <strong>Copy it now: it will not be shown again.</strong>
          </p>
        </ShownOnce>
      ) : null}

      <section aria-labelledby={`${id}-new`}>
        <h2 id={`${id}-new`}>New API key</h2>
        <form className="inline-form" onSubmit={submit} noValidate>
          <div className="field">
            <label htmlFor={`${id}-name`}>Key name</label>
            <input
              id={`${id}-name`}
              value={name}
              maxLength={100}
              required
              placeholder="e.g. evaluation script"
              onChange={(event) => setName(event.target.value)}
              aria-invalid={createError ? true : undefined}
              aria-describedby={createError ? `${id}-create-error` : undefined}
            />
          </div>
          <button type="submit" disabled={create.isPending}>
            Create key
          </button>
        </form>
        {createError ? (
          <p id={`${id}-create-error`} className="error" role="alert">
            {createError}
          </p>
        ) : null}
      </section>

      <section aria-labelledby={`${id}-list`}>
        <h2 id={`${id}-list`}>Your keys</h2>
        {keys.isPending ? (
          <p>Loading…</p>
        ) : keys.isError ? (
          <p className="error" role="alert">
            {messageOf(keys.error)}
          </p>
        ) : keys.data.length === 0 ? (
          <p>You have no API key.</p>
        ) : (
          <ScrollTable label="Your API keys">
            <table>
              <caption className="visually-hidden">Your API keys</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((key) => (
                  <tr key={key.id}>
                    <th scope="row">{key.name ?? <span className="muted">(no name)</span>}</th>
                    <td>
                      <time dateTime={key.created_at}>{shownTime(key.created_at)}</time>
                    </td>
                    <td className="actions">
                      <button type="button" className="danger-text" aria-label={`Revoke ${key.name ?? 'the key without a name'}`} onClick={() => { revoke.reset(); setRevoking(key); }}>
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollTable>
        )}
      </section>

      <ConfirmDelete
        id={`${id}-confirm`}
        title={revoking ? `Revoke the key “${revoking.name ?? ''}”?` : null}
        action="Revoke key"
        busy={revoke.isPending}
        failure={revoke.isError ? messageOf(revoke.error) : undefined}
        onConfirm={() => revoking && revoke.mutate(revoking.id)}
        onClose={() => setRevoking(undefined)}
        cancel="Cancel"
      >
        <p>Programs that use it are refused from now on. This cannot be undone.</p>
      </ConfirmDelete>
    </div>
  );
}
