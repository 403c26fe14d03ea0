import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { canWrite, roleIn } from '../access.ts';
import { messageOf, meQuery } from '../api.ts';
import { queueQuery, queueStatsQuery, rubricQuery } from '../annotate/annotate-queries.ts';
import { useQueueEvents } from '../live/useQueueEvents.ts';
import { ItemDialog } from '../queue/ItemDialog.tsx';
import { ItemsList } from '../queue/ItemsList.tsx';
import { QueueExport } from '../queue/QueueExport.tsx';
import { QueueProgress } from '../queue/QueueProgress.tsx';
import { queueItemsKey } from '../queue/queue-queries.ts';
import { queueRulesQuery } from '../queue/rule-queries.ts';
import { RuleSection } from '../queue/RuleSection.tsx';
import { READ_ONLY_REASON } from '../project/ReadOnlyNote.tsx';
import { QueueSettings } from '../queue/QueueSettings.tsx';
import { Link } from '@tanstack/react-router';
import { UserNamesProvider } from '../users/UserNames.tsx';
import { links } from '../routes.ts';
import { NotForAnnotators } from './NotForAnnotators.tsx';
import type { QueuePageProps } from './page-props.ts';
import '../annotate/annotate.css';
import '../queue/queue.css';
// The rule section's forms and dialogs are the project page's.
import '../project/project.css';

/**
 * A queue: its rubric and settings, its progress (live: other annotators' work shows without a
 * reload), its rules (members write them, viewers read them, annotators are not shown them), and
 * its items with every annotator's values. Viewers read all of it.
 */
export function QueuePage(props: QueuePageProps) {
  const me = useQuery(meQuery(props.client, props.session));
  if (roleIn(me.data, props.projectId) === 'annotator') return <NotForAnnotators />;
  return <QueueOverview {...props} />;
}

function QueueOverview({ client, session, projectId, queueId }: QueuePageProps) {
  const me = useQuery(meQuery(client, session));
  const writable = canWrite(roleIn(me.data, projectId));
  const queue = useQuery(queueQuery(client, session, projectId, queueId));
  const stats = useQuery(queueStatsQuery(client, session, projectId, queueId));
  const specs = useQuery({ ...rubricQuery(client, session, projectId, queue.data?.scorer_refs ?? []), enabled: queue.isSuccess });
  const specsOfValues = useMemo(() => (specs.data ?? []).map(({ ref, name }) => ({ ref, name })), [specs.data]);
  const [opened, setOpened] = useState<string | null>(null);

  // Any change of the queue renews the counts, the items and their values (the queue itself is
  // renewed too: its name or rubric may have changed).
  const live = useQueueEvents(client, projectId, queueId, [
    queueStatsQuery(client, session, projectId, queueId).queryKey,
    queueItemsKey(session, projectId, queueId),
    queueQuery(client, session, projectId, queueId).queryKey,
    queueRulesQuery(client, session, projectId, queueId).queryKey,
  ]);

  if (queue.isPending || (queue.isSuccess && specs.isPending)) return <p>Loading…</p>;
  if (queue.isError) return <p className="error" role="alert">{messageOf(queue.error)}</p>;
  if (specs.isError) return <p className="error" role="alert">{messageOf(specs.error)}</p>;

  const queueData = queue.data;
  const meId = me.data?.user_id;
  const role = roleIn(me.data, projectId);
  return (
    <UserNamesProvider client={client} session={session} projectId={projectId}>
      <div className="queue-page">
        <nav aria-label="Breadcrumb" className="crumbs">
          <Link {...links.project(projectId)}>{projectId}</Link> / <span aria-current="page">{queueData.name}</span>
        </nav>
        <div className="queue-head">
          <h1>{queueData.name}</h1>
          <ul className="queue-links">
            {writable ? (
              <li>
                <Link className="button-link" {...links.annotate(projectId, queueId)}>
                  Start annotating
                </Link>
              </li>
            ) : null}
            <li>
              <Link className="button-link secondary" {...links.agreement(projectId, queueId)}>
                Agreement
              </Link>
            </li>
          </ul>
          <QueueExport client={client} projectId={projectId} queueId={queueId} />
        </div>
        {queueData.description ? <p className="queue-description">{queueData.description}</p> : null}
        {stats.isSuccess ? (
          <QueueProgress stats={stats.data} live={live} meId={meId} />
        ) : stats.isError ? (
          <p className="error" role="alert">{messageOf(stats.error)}</p>
        ) : null}
        <QueueSettings queue={queueData} specs={specs.data ?? []} meId={meId} />
        {role && role !== 'annotator' ? (
          <RuleSection client={client} session={session} projectId={projectId} queueId={queueId} access={{ writable, reason: writable ? null : READ_ONLY_REASON, noteId: 'read-only-rules' }} />
        ) : null}
        <ItemsList client={client} session={session} projectId={projectId} queueId={queueId} specs={specsOfValues} stats={stats.data} meId={meId} canAssign={writable} onOpen={(item) => setOpened(item.call_id)} />
        <ItemDialog client={client} session={session} projectId={projectId} queueId={queueId} specs={specsOfValues} meId={meId} callId={opened} onClose={() => setOpened(null)} />
      </div>
    </UserNamesProvider>
  );
}
