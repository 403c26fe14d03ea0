import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { messageOf, meQuery } from '../api.ts';
import { agreementQuery, type Levels } from '../agreement/agreement-queries.ts';
import { THRESHOLDS_SOURCE } from '../agreement/reading.ts';
import { SpecAgreement } from '../agreement/SpecAgreement.tsx';
import { queueQuery, rubricQuery } from '../annotate/annotate-queries.ts';
import { ItemDialog } from '../queue/ItemDialog.tsx';
import { Link } from '@tanstack/react-router';
import { UserNamesProvider } from '../users/UserNames.tsx';
import { links } from '../routes.ts';
import { roleIn } from '../access.ts';
import { NotForAnnotators } from './NotForAnnotators.tsx';
import type { QueuePageProps } from './page-props.ts';
import '../annotate/annotate.css';
import '../agreement/agreement.css';

/**
 * How far a queue's annotators agree, per scorer spec: Krippendorff's alpha and the observed
 * agreement read in plain words, Cohen's kappa between each two annotators as a heat map, and the
 * items that disagree most, each opening with every annotator's value. Viewers read all of it.
 */
export function AgreementPage(props: QueuePageProps) {
  const me = useQuery(meQuery(props.client, props.session));
  // Annotators are blind to each other's values (contract 5.11).
  if (roleIn(me.data, props.projectId) === 'annotator') return <NotForAnnotators />;
  return <QueueAgreement {...props} />;
}

function QueueAgreement({ client, session, projectId, queueId }: QueuePageProps) {
  const me = useQuery(meQuery(client, session));
  const queue = useQuery(queueQuery(client, session, projectId, queueId));
  // A level chosen on the page replaces the one the spec's schema implies (contract 5.7's `levels`);
  // the figures shown stay until the new ones arrive.
  const [levels, setLevels] = useState<Levels>({});
  const agreement = useQuery({ ...agreementQuery(client, session, projectId, queueId, levels), placeholderData: keepPreviousData });
  const specs = useQuery({ ...rubricQuery(client, session, projectId, queue.data?.scorer_refs ?? []), enabled: queue.isSuccess });
  const specsOfValues = useMemo(() => (specs.data ?? []).map(({ ref, name }) => ({ ref, name })), [specs.data]);
  const [opened, setOpened] = useState<string | null>(null);

  if (queue.isPending) return <p>Loading…</p>;
  if (queue.isError) return <p className="error" role="alert">{messageOf(queue.error)}</p>;
  const queueData = queue.data;
  const meId = me.data?.user_id;
  return (
    <UserNamesProvider client={client} session={session} projectId={projectId}>
      <div className="agreement-page">
        <nav aria-label="Breadcrumb" className="crumbs">
          <Link {...links.project(projectId)}>{projectId}</Link> / <Link {...links.queue(projectId, queueId)}>{queueData.name}</Link> /{' '}
          <span aria-current="page">Agreement</span>
        </nav>
        <h1>Agreement: {queueData.name}</h1>
        <section className="about-agreement" aria-label="How to read this page">
          <p>
            For each scorer spec, <strong>Krippendorff's α</strong> measures how far the annotators agree beyond what chance would give (1 is perfect, 0 is chance), over the
            items that at least two of them rated. The <strong>observed agreement</strong> is the share of matching pairs of values. Reading α:
          </p>
          <ul className="thresholds">
            <li>
              <strong>α ≥ 0.800</strong>: reliable.
            </li>
            <li>
              <strong>0.667 ≤ α &lt; 0.800</strong>: tentative conclusions only.
            </li>
            <li>
              <strong>α &lt; 0.667</strong>: not reliable.
            </li>
          </ul>
          <p className="source">
            Thresholds: <cite>{THRESHOLDS_SOURCE}</cite>
          </p>
        </section>
        {agreement.isPending ? (
          <p>Computing agreement…</p>
        ) : agreement.isError ? (
          <p className="error" role="alert">{messageOf(agreement.error)}</p>
        ) : agreement.data.length ? (
          agreement.data.map((spec) => (
            <SpecAgreement
              key={spec.scorer_ref}
              agreement={spec}
              meId={meId}
              busy={agreement.isPlaceholderData}
              onLevel={(level) => setLevels((current) => ({ ...current, [spec.scorer_ref]: level }))}
              onOpen={(disagreement) => setOpened(disagreement.call_id)}
            />
          ))
        ) : (
          <p>This queue has no scorer specs, so there is nothing to agree on.</p>
        )}
        <ItemDialog client={client} session={session} projectId={projectId} queueId={queueId} specs={specsOfValues} meId={meId} callId={opened} onClose={() => setOpened(null)} />
      </div>
    </UserNamesProvider>
  );
}
