import type { LoupeClient } from '@loupe/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { projectStatsKey, queueQuery, queueStatsQuery } from '../annotate/annotate-queries.ts';
import { messageOf, projectsQuery } from '../api.ts';
import type { LiveState } from '../live/useEventStream.ts';
import { renewQueries } from '../live/renew-queries.ts';
import { useProjectEvents } from '../live/useProjectEvents.ts';
import { Link } from '@tanstack/react-router';
import { links } from '../routes.ts';
import { ConfirmDelete } from './ConfirmDelete.tsx';
import { Modal } from './Modal.tsx';
import { projectMembersQuery, projectQueuesQuery, projectSpecsQuery, QUEUE_LIST_LIMIT, type ProjectQueue, type ProjectSpec, type QueueFields } from './project-queries.ts';
import { changedFields, QueueForm, QUEUE_FIELDS } from './QueueForm.tsx';
import { QueueProgressBar } from './QueueProgressBar.tsx';
import { ReadOnlyNote, writeControl, type Access } from './ReadOnlyNote.tsx';
import { refusalOf, type Refusal } from './refusal.ts';

type Editing = { queue: ProjectQueue | null } | null;

/**
 * The project's queues with their progress, and their creation, editing and deletion. One live
 * event stream for the whole project keeps every card's counts current, and shows queues that
 * others create or delete.
 */
export function QueueSection({ client, session, projectId, access, onNotice }: { client: LoupeClient; session: number; projectId: string; access: Access; onNotice: (text: string) => void }) {
  const queryClient = useQueryClient();
  const queues = useQuery(projectQueuesQuery(client, session, projectId));
  const specs = useQuery(projectSpecsQuery(client, session, projectId));
  const [editing, setEditing] = useState<Editing>(null);
  // The people to assign are read when the form opens (the form is for members and admins only).
  const members = useQuery({ ...projectMembersQuery(client, session, projectId), enabled: editing !== null });
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [deleting, setDeleting] = useState<ProjectQueue | null>(null);
  const [deleteFailure, setDeleteFailure] = useState<string>();
  const headingRef = useRef<HTMLHeadingElement>(null);

  const queuesKey = projectQueuesQuery(client, session, projectId).queryKey;
  const live = useProjectEvents(client, projectId, {
    onQueueChanged: async (queueId, updated) => {
      // A queue created, edited or deleted: the list first, so that the counts of a queue just
      // deleted are not read (they are gone: 404).
      if (updated) await renewQueries(queryClient, queuesKey);
      if (!queryClient.getQueryData(queuesKey)?.some((queue) => queue.id === queueId)) return;
      await renewQueries(queryClient, queueStatsQuery(client, session, projectId, queueId).queryKey);
    },
    onReconnect: () => {
      void renewQueries(queryClient, queuesKey);
      void renewQueries(queryClient, projectStatsKey(session, projectId));
    },
  });
  const save = useMutation({
    mutationFn: async ({ queue, fields }: { queue: ProjectQueue | null; fields: QueueFields }) => {
      if (queue) await client.annotationQueues.update.mutate({ project_id: projectId, queue_id: queue.id, ...changedFields(queue, fields) });
      else await client.annotationQueues.create.mutate({ project_id: projectId, ...fields });
    },
    onSuccess: async (_answer, { queue, fields }) => {
      setEditing(null);
      onNotice(queue ? `Saved queue ${fields.name}.` : `Created queue ${fields.name}.`);
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: queuesKey }),
        queryClient.invalidateQueries({ queryKey: projectsQuery(client, session).queryKey }),
        ...(queue ? [queryClient.invalidateQueries({ queryKey: queueQuery(client, session, projectId, queue.id).queryKey })] : []),
      ]);
    },
    onError: (error) => setRefusal(refusalOf(error, QUEUE_FIELDS)),
  });

  const remove = useMutation({
    mutationFn: (queue: ProjectQueue) => client.annotationQueues.delete.mutate({ project_id: projectId, queue_id: queue.id }),
    onSuccess: async (_answer, queue) => {
      setDeleting(null);
      onNotice(`Deleted queue ${queue.name} and its items.`);
      headingRef.current?.focus();
      // Its card goes at once; its queries, unobserved, are dropped with the cache's collection.
      queryClient.setQueryData(queuesKey, (list) => list?.filter((other) => other.id !== queue.id));
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: queuesKey }),
        queryClient.invalidateQueries({ queryKey: projectsQuery(client, session).queryKey }),
      ]);
    },
    onError: (error) => setDeleteFailure(messageOf(error)),
  });

  const openForm = (queue: ProjectQueue | null) => {
    setRefusal(null);
    save.reset();
    setEditing({ queue });
  };
  const askDelete = (queue: ProjectQueue) => {
    setDeleteFailure(undefined);
    remove.reset();
    setDeleting(queue);
  };

  const specList: ProjectSpec[] = specs.data ?? [];
  return (
    <section className="project-section" aria-labelledby="queues-title">
      <div className="section-head">
        <h2 id="queues-title" ref={headingRef} tabIndex={-1}>
          Queues
        </h2>
        <button type="button" onClick={() => openForm(null)} aria-haspopup="dialog" {...writeControl(access)}>
          New queue
        </button>
      </div>
      <ReadOnlyNote access={access} />
      {queues.isPending ? (
        <p>Loading…</p>
      ) : queues.isError ? (
        <p className="error" role="alert">
          {messageOf(queues.error)}
        </p>
      ) : queues.data.length ? (
        <>
          <ul className="queue-list">
            {queues.data.map((queue) => (
              <QueueCard
                key={queue.id}
                client={client}
                session={session}
                projectId={projectId}
                queue={queue}
                specs={specList}
                live={live}
                access={access}
                onEdit={() => openForm(queue)}
                onDelete={() => askDelete(queue)}
              />
            ))}
          </ul>
          {queues.data.length >= QUEUE_LIST_LIMIT ? <p className="hint">Showing the newest {QUEUE_LIST_LIMIT} queues.</p> : null}
        </>
      ) : (
        <p>No queues yet.</p>
      )}

      <Modal open={editing !== null} onClose={() => setEditing(null)} labelledBy="queue-form-title">
        <h2 id="queue-form-title">{editing?.queue ? `Edit queue ${editing.queue.name}` : 'New queue'}</h2>
        {editing ? (
          <QueueForm
            key={editing.queue?.id ?? 'new'}
            queue={editing.queue}
            specs={specList}
            members={members.isError ? [] : members.data}
            busy={save.isPending}
            refusal={refusal}
            onSubmit={(fields) => {
              setRefusal(null);
              save.mutate({ queue: editing.queue, fields });
            }}
            onCancel={() => setEditing(null)}
          />
        ) : null}
      </Modal>

      <ConfirmDelete
        id="queue-delete-title"
        title={deleting ? `Delete queue ${deleting.name}?` : null}
        action="Delete queue"
        busy={remove.isPending}
        failure={deleteFailure}
        onConfirm={() => deleting && remove.mutate(deleting)}
        onClose={() => setDeleting(null)}
      >
        <p>The queue and its items are deleted: annotators can no longer open it. Feedback already given stays.</p>
      </ConfirmDelete>
    </section>
  );
}

function QueueCard({
  client,
  session,
  projectId,
  queue,
  specs,
  live,
  access,
  onEdit,
  onDelete,
}: {
  client: LoupeClient;
  session: number;
  projectId: string;
  queue: ProjectQueue;
  specs: ProjectSpec[];
  live: LiveState;
  access: Access;
  onEdit: () => void;
  onDelete: () => void;
}) {
  const statsQuery = queueStatsQuery(client, session, projectId, queue.id);
  // Done / total follow every annotator's work without a reload (the section's project stream).
  const stats = useQuery(statsQuery);
  const byRef = new Map(specs.map((spec) => [spec.ref, spec]));
  const titleId = `queue-${queue.id}-title`;
  return (
    <li>
      <article className="queue-card panel" aria-labelledby={titleId}>
      <div className="queue-head">
        <h3 id={titleId}>
          <Link {...links.queue(projectId, queue.id)}>{queue.name}</Link>
        </h3>
        <div className="queue-actions">
          <Link className="button-link" {...links.annotate(projectId, queue.id)} aria-label={`Annotate ${queue.name}`}>
            Annotate
          </Link>
          <button type="button" className="secondary" onClick={onEdit} aria-haspopup="dialog" aria-label={`Edit ${queue.name}`} {...writeControl(access)}>
            Edit
          </button>
          <button type="button" className="secondary danger-text" onClick={onDelete} aria-haspopup="dialog" aria-label={`Delete ${queue.name}`} {...writeControl(access)}>
            Delete
          </button>
        </div>
      </div>
      {queue.description ? <p className="queue-description">{queue.description}</p> : null}
      <p className="queue-settings">
        Rubric:{' '}
        {queue.scorer_refs.length
          ? queue.scorer_refs.map((ref) => byRef.get(ref)?.name ?? ref).join(', ')
          : 'note and reaction only'}
        {' · '}
        {queue.annotations_per_item} {queue.annotations_per_item === 1 ? 'annotation' : 'annotations'} per item
        {queue.overlap_coverage < 1 ? ` on ${Math.round(queue.overlap_coverage * 100)} % of items` : ''} · lease {queue.lease_seconds} s ·{' '}
        {queue.access === 'assigned' ? `assigned to ${queue.assignees.length} ${queue.assignees.length === 1 ? 'person' : 'people'}` : 'open to every annotator'}
      </p>
      {stats.isError ? (
        <p className="error">{messageOf(stats.error)}</p>
      ) : (
        <QueueProgressBar queueName={queue.name} stats={stats.data} live={live} />
      )}
      </article>
    </li>
  );
}
