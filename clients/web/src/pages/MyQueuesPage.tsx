import type { LoupeClient } from '@loupe/client';
import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { roleIn } from '../access.ts';
import { messageOf, meQuery, type Me } from '../api.ts';
import { FollowTopic } from '../mine/FollowTopic.tsx';
import { myQueuesQuery, topicsOf, type MyQueue } from '../mine/my-queues.ts';
import { links } from '../routes.ts';
import '../mine/mine.css';

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * "My queues": every queue the caller may claim from — open queues of their projects, assigned
 * queues naming them — with what is left for them and a way in; an annotator's home. Kept current
 * by the projects' and queues' live events.
 */
export function MyQueuesPage({ client, session }: { client: LoupeClient; session: number }) {
  const me = useQuery(meQuery(client, session));
  const mineQuery = myQueuesQuery(client, session);
  const queues = useQuery(mineQuery);
  const byProject = Map.groupBy(queues.data ?? [], (entry) => entry.project_id);

  return (
    <div className="my-queues">
      <h1>My queues</h1>
      <p className="intro">The queues you may annotate in, with what is left for you. They follow other people’s work as it happens.</p>
      {queues.isPending ? (
        <p>Loading…</p>
      ) : queues.isError ? (
        <p className="error" role="alert">
          {messageOf(queues.error)}
        </p>
      ) : byProject.size ? (
        [...byProject].map(([projectId, entries]) => <ProjectQueues key={projectId} projectId={projectId} entries={entries} me={me.data} />)
      ) : (
        <p>No queue is open to you yet. A queue shows here once it is open to everyone in your projects, or assigned to you.</p>
      )}
      {me.isSuccess && queues.isSuccess
        ? topicsOf(me.data, queues.data).map((topic) => (
            <FollowTopic key={`${topic.projectId}/${topic.queueId ?? ''}`} client={client} topic={topic} queryKey={mineQuery.queryKey} />
          ))
        : null}
    </div>
  );
}

function ProjectQueues({ projectId, entries, me }: { projectId: string; entries: MyQueue[]; me: Me | undefined }) {
  const titleId = `mine-${projectId}`;
  const annotator = roleIn(me, projectId) === 'annotator';
  return (
    <section aria-labelledby={titleId} className="mine-project">
      <h2 id={titleId}>{annotator ? projectId : <Link {...links.project(projectId)}>{projectId}</Link>}</h2>
      <ul className="mine-list">
        {entries.map(({ queue, remaining_for_me: remaining, done_by_me: done }) => (
          <li key={queue.id} className="panel mine-card" data-queue-id={queue.id}>
            <div className="mine-head">
              <h3>{queue.name}</h3>
              {queue.access === 'assigned' ? <span className="tag">Assigned to you</span> : null}
            </div>
            {queue.description ? <p className="mine-description">{queue.description}</p> : null}
            <p className="mine-counts">
              <strong>{count(remaining, 'item', 'items')}</strong> left for you · {count(done, 'item', 'items')} done by you
            </p>
            {remaining > 0 ? (
              <Link className="button-link" {...links.annotate(projectId, queue.id)} aria-label={`Start annotating ${queue.name}`}>
                Start annotating
              </Link>
            ) : (
              <p className="muted">Nothing left for you here.</p>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
