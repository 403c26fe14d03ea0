import { useId, useState, type ReactNode } from 'react';
import type { ProjectMember } from './project-queries.ts';

/** Members shown at once; a larger entity is narrowed by name first. */
const SHOWN = 50;

/**
 * The queue's assignees, picked by username among the entity's members who may work queues
 * (admins, members, annotators: not viewers), narrowed by a name filter. An assignee who is no
 * longer among them stays listed by id, so that saving keeps them unless unticked.
 */
export function AssigneePicker({
  members,
  chosen,
  onChange,
  invalid,
  error,
}: {
  members: ProjectMember[] | undefined;
  chosen: string[];
  onChange: (userIds: string[]) => void;
  invalid: Record<string, unknown>;
  error: ReactNode;
}) {
  const id = useId();
  const [filter, setFilter] = useState('');
  const workers = (members ?? []).filter((member) => member.role !== 'viewer');
  const known = new Set(workers.map((member) => member.user_id));
  const needle = filter.trim().toLowerCase();
  const matching = workers.filter((member) => member.username.toLowerCase().includes(needle));
  // The chosen stay in view whatever the filter, so that the list shows who is picked.
  const shown = [...matching.filter((member) => chosen.includes(member.user_id)), ...matching.filter((member) => !chosen.includes(member.user_id)).slice(0, SHOWN)];
  const formerIds = chosen.filter((userId) => members !== undefined && !known.has(userId));
  const toggle = (userId: string, on: boolean) => onChange(on ? [...chosen, userId] : chosen.filter((other) => other !== userId));

  return (
    <fieldset className="field assignee-choices" {...invalid}>
      <legend>Assignees</legend>
      <p className="field-about">Under “Only the assignees”, no one else may claim the queue’s items. {chosen.length === 1 ? '1 person chosen.' : `${chosen.length} people chosen.`}</p>
      {members === undefined ? (
        <p>Loading the members…</p>
      ) : (
        <>
          {workers.length > 8 ? (
            <div className="assignee-filter">
              <label htmlFor={`${id}-filter`}>Find a person</label>
              <input id={`${id}-filter`} type="search" value={filter} onChange={(event) => setFilter(event.target.value)} autoComplete="off" />
            </div>
          ) : null}
          <ul>
            {shown.map((member) => (
              <li key={member.user_id}>
                <label className="check">
                  <input type="checkbox" checked={chosen.includes(member.user_id)} onChange={(event) => toggle(member.user_id, event.target.checked)} />
                  {member.username} <span className="muted">{member.role}</span>
                </label>
              </li>
            ))}
            {formerIds.map((userId) => (
              <li key={userId}>
                <label className="check">
                  <input type="checkbox" checked onChange={(event) => toggle(userId, event.target.checked)} />
                  <code>{userId}</code> <span className="muted">no longer a member</span>
                </label>
              </li>
            ))}
          </ul>
          {!workers.length ? <p className="muted">The entity has no member who may annotate.</p> : matching.length > shown.length ? <p className="muted">More match: type more of a name.</p> : null}
        </>
      )}
      {error}
    </fieldset>
  );
}
