import type { LoupeClient } from '@loupe/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { projectStatsKey } from '../annotate/annotate-queries.ts';
import { messageOf } from '../api.ts';
import { projectMembersQuery } from '../project/project-queries.ts';
import { queueItemsKey } from './queue-queries.ts';

/** The value of the "nobody" choice: the items go back to whoever claims them. */
const NOBODY = '';

/**
 * Assigns the selected items to one person, who alone may then claim them, or to nobody
 * (items/assign, contract 5.11). The people offered are the entity's members who may annotate.
 */
export function AssignItems({
  client,
  session,
  projectId,
  queueId,
  selected,
  onAssigned,
}: {
  client: LoupeClient;
  session: number;
  projectId: string;
  queueId: string;
  selected: string[];
  onAssigned: () => void;
}) {
  const id = useId();
  const queryClient = useQueryClient();
  const members = useQuery(projectMembersQuery(client, session, projectId));
  const [userId, setUserId] = useState(NOBODY);
  const [notice, setNotice] = useState<string>();
  const workers = (members.data ?? []).filter((member) => member.role !== 'viewer');
  const assign = useMutation({
    mutationFn: (itemIds: string[]) => client.annotationQueues.items.assign.mutate({ project_id: projectId, queue_id: queueId, item_ids: itemIds, user_id: userId || null }),
    onSuccess: async ({ assigned_count, missing_item_ids }) => {
      const who = workers.find((member) => member.user_id === userId)?.username;
      const items = assigned_count === 1 ? '1 item' : `${assigned_count} items`;
      const gone = missing_item_ids.length ? ` ${missing_item_ids.length} were no longer in the queue.` : '';
      setNotice(`${who ? `Assigned ${items} to ${who}.` : `${items} now open to anyone.`}${gone}`);
      onAssigned();
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: queueItemsKey(session, projectId, queueId) }),
        queryClient.invalidateQueries({ queryKey: [...projectStatsKey(session, projectId), queueId] }),
      ]);
    },
  });

  return (
    <div className="assign-items">
      <p className="selected-count">{selected.length === 1 ? '1 item selected' : `${selected.length} items selected`}</p>
      <label htmlFor={`${id}-who`}>Assign to</label>
      <select id={`${id}-who`} value={userId} onChange={(event) => setUserId(event.target.value)} disabled={!members.isSuccess}>
        <option value={NOBODY}>Nobody (anyone may claim)</option>
        {workers.map((member) => (
          <option key={member.user_id} value={member.user_id}>
            {member.username}
          </option>
        ))}
      </select>
      <button type="button" onClick={() => assign.mutate(selected)} disabled={!selected.length || assign.isPending}>
        Assign
      </button>
      <div role="status" className="assign-status">
        {notice ? <p>{notice}</p> : null}
      </div>
      {assign.isError ? (
        <p className="error" role="alert">
          {messageOf(assign.error)}
        </p>
      ) : members.isError ? (
        <p className="error" role="alert">
          {messageOf(members.error)}
        </p>
      ) : null}
    </div>
  );
}
