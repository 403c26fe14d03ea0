import type { LoupeClient } from '@loupe/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import type { Role } from '../access.ts';
import { meQuery, messageOf } from '../api.ts';
import { ScrollTable } from '../queue/ScrollTable.tsx';
import { ConfirmDelete } from '../project/ConfirmDelete.tsx';
import { invitationsQuery, membersQuery, shownTime, type Invitation, type Member } from './people-queries.ts';
import { ShownOnce } from '../ShownOnce.tsx';
import './people.css';

const ROLES: { role: Role; about: string }[] = [
  { role: 'admin', about: 'admin (everything, members too)' },
  { role: 'member', about: 'member (reads and writes data)' },
  { role: 'annotator', about: 'annotator (works the queues)' },
  { role: 'viewer', about: 'viewer (reads only)' },
];
const EXPIRIES = [
  { hours: 24, label: '1 day' },
  { hours: 168, label: '7 days' },
  { hours: 720, label: '30 days' },
];

type PageProps = { client: LoupeClient; session: number; entity: string };

/**
 * An entity's members and invitations, for its admins (contract 5.12): roles changed and members
 * removed in place, invitation links made (shown once) and revoked. The server keeps the last
 * admin one; its refusal shows at the control that asked.
 */
export function MembersPage({ client, session, entity }: PageProps) {
  const me = useQuery(meQuery(client, session));
  if (me.isPending) return <p role="status">Loading…</p>;
  if (me.isError) return <p className="error" role="alert">{messageOf(me.error)}</p>;
  const admin = me.data.memberships.some((membership) => membership.entity === entity && membership.role === 'admin');
  return (
    <div className="people-page">
      <h1>Members of {entity}</h1>
      {admin ? (
        <>
          <MemberList client={client} session={session} entity={entity} self={me.data.user_id} />
          <Invitations client={client} session={session} entity={entity} />
        </>
      ) : (
        <p>Only admins of {entity} manage its members.</p>
      )}
    </div>
  );
}

function MemberList({ client, session, entity, self }: PageProps & { self: string }) {
  const id = useId();
  const queryClient = useQueryClient();
  const members = useQuery(membersQuery(client, session, entity));
  const [removing, setRemoving] = useState<Member>();
  const refresh = () => queryClient.invalidateQueries({ queryKey: membersQuery(client, session, entity).queryKey });
  const remove = useMutation({
    mutationFn: (userId: string) => client.entities.members.remove.mutate({ entity, user_id: userId }),
    onSuccess: () => {
      setRemoving(undefined);
      void refresh();
    },
  });
  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Members</h2>
      {members.isPending ? (
        <p>Loading…</p>
      ) : members.isError ? (
        <p className="error" role="alert">{messageOf(members.error)}</p>
      ) : (
        <ScrollTable label={`Members of ${entity}`}>
          <table className="members">
            <caption className="visually-hidden">Members of {entity}</caption>
            <thead>
              <tr>
                <th scope="col">Username</th>
                <th scope="col">Role</th>
                <th scope="col">Last seen</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {members.data.map((member) => (
                <MemberRow
                  key={member.user_id}
                  client={client}
                  entity={entity}
                  member={member}
                  self={member.user_id === self}
                  onChanged={refresh}
                  onRemove={() => {
                    remove.reset();
                    setRemoving(member);
                  }}
                />
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
      <ConfirmDelete
        id={`${id}-confirm`}
        title={removing ? `Remove ${removing.username} from ${entity}?` : null}
        action="Remove member"
        busy={remove.isPending}
        failure={remove.isError ? messageOf(remove.error) : undefined}
        onConfirm={() => removing && remove.mutate(removing.user_id)}
        onClose={() => setRemoving(undefined)}
        cancel="Cancel"
      >
        <p>They lose access to the entity’s projects at once. An invitation brings them back.</p>
      </ConfirmDelete>
    </section>
  );
}

/** One member: a role select that saves on change (a refusal shows under it), and Remove. */
function MemberRow({ client, entity, member, self, onChanged, onRemove }: {
  client: LoupeClient;
  entity: string;
  member: Member;
  self: boolean;
  onChanged: () => Promise<unknown>;
  onRemove: () => void;
}) {
  const id = useId();
  const update = useMutation({
    mutationFn: (role: Role) => client.entities.members.update.mutate({ entity, user_id: member.user_id, role }),
    onSuccess: () => onChanged(),
  });
  const error = update.isError ? messageOf(update.error) : undefined;
  return (
    <tr>
      <th scope="row">
        {member.username}
        {self ? <span className="muted"> (you)</span> : null}
      </th>
      <td>
        <select
          aria-label={`Role of ${member.username}`}
          value={update.isPending ? update.variables : member.role}
          disabled={update.isPending}
          onChange={(event) => update.mutate(event.target.value as Role)}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
        >
          {ROLES.map(({ role }) => (
            <option key={role} value={role}>
              {role}
            </option>
          ))}
        </select>
        {error ? (
          <p id={`${id}-error`} className="error control-error" role="alert">
            {error}
          </p>
        ) : null}
      </td>
      <td>{member.last_seen_at ? <time dateTime={member.last_seen_at}>{shownTime(member.last_seen_at)}</time> : <span className="muted">never</span>}</td>
      <td className="actions">
        <button type="button" className="danger-text" aria-label={`Remove ${member.username}`} onClick={onRemove}>
          Remove
        </button>
      </td>
    </tr>
  );
}

/** Invite with a role (and an expiry): the link is shown once; pending invitations can be revoked. */
function Invitations({ client, session, entity }: PageProps) {
  const id = useId();
  const queryClient = useQueryClient();
  const invitations = useQuery(invitationsQuery(client, session, entity));
  const [role, setRole] = useState<Role>('member');
  const [hours, setHours] = useState(168);
  const [made, setMade] = useState<{ url: string; role: Role }>();
  const refresh = () => queryClient.invalidateQueries({ queryKey: invitationsQuery(client, session, entity).queryKey });
  const create = useMutation({
    mutationFn: () => client.entities.invitations.create.mutate({ entity, role, expires_in_hours: hours }),
    onSuccess: ({ invitation }) => {
      setMade({ url: invitation.url, role: invitation.role });
      void refresh();
    },
  });
  const revoke = useMutation({
    mutationFn: (invitationId: string) => client.entities.invitations.revoke.mutate({ entity, id: invitationId }),
    onSuccess: () => refresh(),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  const pending = invitations.data?.filter((invitation) => invitation.state === 'pending') ?? [];
  return (
    <>
      <section aria-labelledby={`${id}-invite`}>
        <h2 id={`${id}-invite`}>Invite someone</h2>
        <p className="lede">The link lets one person join {entity} with the role: they choose a username and password, or join with the account they are signed in with.</p>
        {made ? (
          <ShownOnce
            title={`New invitation (${made.role})`}
            label="Invitation link"
            value={made.url}
            onDone={() => setMade(undefined)}
          >
            <p>
              <strong>Copy it now and send it to the person: it will not be shown again.</strong>
            </p>
          </ShownOnce>
        ) : null}
        <form className="inline-form" onSubmit={submit} noValidate>
          <div className="field">
            <label htmlFor={`${id}-role`}>Role</label>
            <select id={`${id}-role`} value={role} onChange={(event) => setRole(event.target.value as Role)}>
              {ROLES.map(({ role: value, about }) => (
                <option key={value} value={value}>
                  {about}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-expiry`}>Expires in</label>
            <select id={`${id}-expiry`} value={hours} onChange={(event) => setHours(Number(event.target.value))}>
              {EXPIRIES.map((expiry) => (
                <option key={expiry.hours} value={expiry.hours}>
                  {expiry.label}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" disabled={create.isPending}>
            Create invitation link
          </button>
        </form>
        {create.isError ? (
          <p className="error" role="alert">
            {messageOf(create.error)}
          </p>
        ) : null}
      </section>

      <section aria-labelledby={`${id}-pending`}>
        <h2 id={`${id}-pending`}>Pending invitations</h2>
        {revoke.isError ? (
          <p className="error" role="alert">
            {messageOf(revoke.error)}
          </p>
        ) : null}
        {invitations.isPending ? (
          <p>Loading…</p>
        ) : invitations.isError ? (
          <p className="error" role="alert">{messageOf(invitations.error)}</p>
        ) : pending.length === 0 ? (
          <p>No invitation is waiting.</p>
        ) : (
          <ScrollTable label="Pending invitations">
            <table className="invitations">
              <caption className="visually-hidden">Pending invitations</caption>
              <thead>
                <tr>
                  <th scope="col">Role</th>
                  <th scope="col">Made</th>
                  <th scope="col">Expires</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {pending.map((invitation) => (
                  <InvitationRow key={invitation.id} invitation={invitation} pending={revoke.isPending && revoke.variables === invitation.id} onRevoke={() => revoke.mutate(invitation.id)} />
                ))}
              </tbody>
            </table>
          </ScrollTable>
        )}
      </section>
    </>
  );
}

function InvitationRow({ invitation, pending, onRevoke }: { invitation: Invitation; pending: boolean; onRevoke: () => void }) {
  const made = shownTime(invitation.created_at);
  return (
    <tr>
      <th scope="row">{invitation.role}</th>
      <td>
        <time dateTime={invitation.created_at}>{made}</time>
      </td>
      <td>
        <time dateTime={invitation.expires_at}>{shownTime(invitation.expires_at)}</time>
      </td>
      <td className="actions">
        <button type="button" className="danger-text" aria-label={`Revoke the ${invitation.role} invitation made ${made}`} disabled={pending} onClick={onRevoke}>
          Revoke
        </button>
      </td>
    </tr>
  );
}
