import type { LoupeClient } from '@loupe/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { messageOf } from '../api.ts';
import { ConfirmDelete } from '../project/ConfirmDelete.tsx';
import { Modal } from '../project/Modal.tsx';
import { ReadOnlyNote, writeControl, type Access } from '../project/ReadOnlyNote.tsx';
import { refusalOf, type Refusal } from '../project/refusal.ts';
import { count, dateWords, ruleFilterWords } from './rule-draft.ts';
import { queueRulesQuery, type QueueRule, type RuleCreate } from './rule-queries.ts';
import { RULE_FIELDS, RuleForm } from './RuleForm.tsx';
import './rules.css';

/**
 * The queue's rules (contract 5.10) with their stats and backfill progress, and their creation,
 * enabling, disabling and deletion. The list is read again on the queue's live events (the page
 * passes its key to useQueueEvents) and, while a backfill runs, every few seconds (a chunk that
 * adds nothing sends no event). Viewers read it; annotators are not shown it (the page decides).
 */
export function RuleSection({ client, session, projectId, queueId, access }: { client: LoupeClient; session: number; projectId: string; queueId: string; access: Access }) {
  const queryClient = useQueryClient();
  const rulesQuery = queueRulesQuery(client, session, projectId, queueId);
  const rules = useQuery(rulesQuery);
  const [creating, setCreating] = useState(false);
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [deleting, setDeleting] = useState<QueueRule | null>(null);
  const [failure, setFailure] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const headingRef = useRef<HTMLHeadingElement>(null);
  const where = { project_id: projectId, queue_id: queueId };

  /** A rule as the server answered it, in the list at once; the list is then read again. */
  const settle = async (rule: QueueRule, gone = false) => {
    queryClient.setQueryData(rulesQuery.queryKey, (list) => {
      if (!list) return list;
      if (gone) return list.filter((other) => other.id !== rule.id);
      return list.some((other) => other.id === rule.id) ? list.map((other) => (other.id === rule.id ? rule : other)) : [...list, rule];
    });
    await queryClient.invalidateQueries({ queryKey: rulesQuery.queryKey });
  };

  const create = useMutation({
    mutationFn: (rule: RuleCreate) => client.annotationQueues.rules.create.mutate({ ...where, ...rule }),
    onSuccess: ({ rule }) => {
      setCreating(false);
      setNotice(`Created rule ${rule.name}.`);
      return settle(rule);
    },
    onError: (error) => setRefusal(refusalOf(error, Object.keys(RULE_FIELDS))),
  });
  const toggle = useMutation({
    mutationFn: (rule: QueueRule) => client.annotationQueues.rules.update.mutate({ ...where, rule_id: rule.id, enabled: !rule.enabled }),
    onSuccess: ({ rule }) => {
      setNotice(`${rule.enabled ? 'Enabled' : 'Disabled'} rule ${rule.name}.`);
      return settle(rule);
    },
    onError: (error) => setNotice(messageOf(error)),
  });
  const remove = useMutation({
    mutationFn: (rule: QueueRule) => client.annotationQueues.rules.delete.mutate({ ...where, rule_id: rule.id }),
    onSuccess: ({ rule }) => {
      setDeleting(null);
      setNotice(`Deleted rule ${rule.name}; the items it added stay.`);
      headingRef.current?.focus();
      return settle(rule, true);
    },
    onError: (error) => setFailure(messageOf(error)),
  });

  const openForm = () => {
    setRefusal(null);
    create.reset();
    setCreating(true);
  };
  const askDelete = (rule: QueueRule) => {
    setFailure(undefined);
    remove.reset();
    setDeleting(rule);
  };

  return (
    <section className="project rule-section panel" aria-labelledby="rules-title">
      <div className="section-head">
        <h2 id="rules-title" ref={headingRef} tabIndex={-1}>
          Rules
        </h2>
        <button type="button" onClick={openForm} aria-haspopup="dialog" {...writeControl(access)}>
          New rule
        </button>
      </div>
      <p className="field-about">Rules fill the queue: they add the calls that match a filter as they are stored, or the calls that get matching feedback.</p>
      <ReadOnlyNote access={access} />
      <div role="status" className="notices">
        {notice ? <p className="notice">{notice}</p> : null}
      </div>
      {rules.isPending ? (
        <p>Loading…</p>
      ) : rules.isError ? (
        <p className="error" role="alert">
          {messageOf(rules.error)}
        </p>
      ) : rules.data.length ? (
        <ul className="rule-list">
          {rules.data.map((rule) => (
            <RuleCard key={rule.id} rule={rule} access={access} onToggle={() => toggle.isPending || toggle.mutate(rule)} onDelete={() => askDelete(rule)} />
          ))}
        </ul>
      ) : (
        <p>No rules: items are added by hand.</p>
      )}

      <Modal open={creating} onClose={() => setCreating(false)} labelledBy="rule-form-title" className="rule-dialog">
        <h2 id="rule-form-title">New rule</h2>
        {creating ? (
          <RuleForm
            client={client}
            session={session}
            projectId={projectId}
            queueId={queueId}
            busy={create.isPending}
            refusal={refusal}
            onSubmit={(rule) => {
              setRefusal(null);
              create.mutate(rule);
            }}
            onCancel={() => setCreating(false)}
          />
        ) : null}
      </Modal>

      <ConfirmDelete
        id="rule-delete-title"
        title={deleting ? `Delete rule ${deleting.name}?` : null}
        action="Delete rule"
        busy={remove.isPending}
        failure={failure}
        onConfirm={() => deleting && remove.mutate(deleting)}
        onClose={() => setDeleting(null)}
      >
        <p>The rule stops adding calls. The items it added stay in the queue.</p>
      </ConfirmDelete>
    </section>
  );
}

const STAT_LABELS = [
  ['considered', 'Considered'],
  ['matched', 'Matched'],
  ['sampled_out', 'Sampled out'],
  ['capped', 'Over the cap'],
  ['added', 'Added'],
] as const;

/** One rule: what it adds, its share and cap, its counts, its backfill, and its actions. */
function RuleCard({ rule, access, onToggle, onDelete }: { rule: QueueRule; access: Access; onToggle: () => void; onDelete: () => void }) {
  const titleId = `rule-${rule.id}-title`;
  const conditions = ruleFilterWords(rule);
  const share = `${Number((rule.sample_rate * 100).toPrecision(6))}%`;
  return (
    <li>
      <article className="rule-card" aria-labelledby={titleId} data-rule-id={rule.id}>
        <div className="rule-head">
          <h3 id={titleId}>{rule.name}</h3>
          <span className={`rule-state ${rule.enabled ? 'on' : 'off'}`}>{rule.enabled ? 'Enabled' : 'Disabled'}</span>
          <div className="rule-actions">
            {/* Not disabled while the change is sent: a disabled button would lose the focus. */}
            <button type="button" className="secondary" onClick={onToggle} aria-label={`${rule.enabled ? 'Disable' : 'Enable'} ${rule.name}`} {...writeControl(access)}>
              {rule.enabled ? 'Disable' : 'Enable'}
            </button>
            <button type="button" className="secondary danger-text" onClick={onDelete} aria-haspopup="dialog" aria-label={`Delete ${rule.name}`} {...writeControl(access)}>
              Delete
            </button>
          </div>
        </div>
        <p className="rule-what">
          {rule.trigger === 'call' ? 'Adds calls as they are stored' : 'Adds the calls that get feedback'}
          {conditions.length ? ' where:' : rule.trigger === 'call' ? ': every call.' : ': any feedback.'}
        </p>
        {conditions.length ? (
          <ul className="rule-conditions">
            {conditions.map((words, index) => (
              <li key={index}>{words}</li>
            ))}
          </ul>
        ) : null}
        <p className="rule-rate">
          {share} of matching calls{rule.max_items_per_day === null ? ', no daily cap' : `, at most ${count(rule.max_items_per_day)} a day`}
        </p>
        <dl className="rule-stats">
          {STAT_LABELS.map(([key, label]) => (
            <div key={key}>
              <dt>{label}</dt>
              <dd data-stat={key}>{count(rule.stats[key])}</dd>
            </div>
          ))}
          <div>
            <dt>Last added</dt>
            <dd data-stat="last_added_at">{rule.stats.last_added_at ? <time dateTime={rule.stats.last_added_at}>{dateWords(rule.stats.last_added_at)}</time> : 'never'}</dd>
          </div>
        </dl>
        {rule.backfill ? <BackfillLine rule={rule} /> : null}
      </article>
    </li>
  );
}

/** A backfill's state and counts; a bar moves while it runs (its total is not known beforehand). */
function BackfillLine({ rule }: { rule: QueueRule }) {
  const backfill = rule.backfill!;
  const counts = `${count(backfill.considered)} stored ${backfill.considered === 1 ? 'call' : 'calls'} considered, ${count(backfill.added)} added`;
  const state = backfill.state === 'running' ? (rule.enabled ? 'running' : 'waiting until the rule is enabled') : backfill.state;
  return (
    <div className="rule-backfill" data-state={backfill.state}>
      <p>
        <strong>Backfill</strong> from {dateWords(backfill.since)}: <span className="backfill-state">{state}</span> · <span className="backfill-counts">{counts}</span>
        {backfill.reason ? <span className="error"> · {backfill.reason}</span> : null}
      </p>
      {backfill.state === 'running' && rule.enabled ? <progress aria-label={`Backfill of ${rule.name}`} /> : null}
    </div>
  );
}
