import type { Queue, Spec } from '../annotate/annotate-queries.ts';
import { fieldKind, type FieldKind } from '../annotate/rubric-fields.ts';
import { Annotator } from './Annotator.tsx';
import { scalarText } from './ValueText.tsx';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** The queue's rubric (its scorer specs, refs under "Advanced") and settings. */
export function QueueSettings({ queue, specs, meId }: { queue: Queue; specs: Spec[]; meId: string | undefined }) {
  return (
    <div className="queue-about">
      <section className="panel" aria-labelledby="rubric-title">
        <h2 id="rubric-title">Rubric</h2>
        {specs.length ? (
          <ul className="specs">
            {specs.map((spec) => (
              <li key={spec.ref}>
                <strong>{spec.name}</strong> <span className="spec-kind">{kindWords(fieldKind(spec.field_schema))}</span>
                {spec.description ? <p>{spec.description}</p> : null}
                <details className="advanced">
                  <summary>Advanced</summary>
                  <p>
                    Reference: <code className="spec-ref">{spec.ref}</code>
                  </p>
                </details>
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">No rubric fields: annotators give a note and a reaction only.</p>
        )}
      </section>
      <section className="panel" aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <dl className="settings">
          <div>
            <dt>Annotations per item</dt>
            <dd>
              {queue.annotations_per_item}
              {queue.annotations_per_item > 1 && queue.overlap_coverage < 1 ? (
                <span className="muted"> on {Math.round(queue.overlap_coverage * 100)} % of the items (overlap coverage {queue.overlap_coverage}); one on the others</span>
              ) : null}
            </dd>
          </div>
          <div>
            <dt>Who may annotate</dt>
            <dd>{queue.access === 'assigned' ? 'Only the assignees' : 'Everyone who annotates in the project'}</dd>
          </div>
          <div>
            <dt>Assignees</dt>
            <dd>
              {queue.assignees.length ? (
                <ul className="assignees">
                  {queue.assignees.map((userId) => (
                    <li key={userId}>
                      <Annotator userId={userId} meId={meId} />
                    </li>
                  ))}
                </ul>
              ) : (
                <span className="muted">none</span>
              )}
            </dd>
          </div>
          <div>
            <dt>Lease</dt>
            <dd>
              {leaseWords(queue.lease_seconds)} <span className="muted">(how long a claimed item is held for its annotator)</span>
            </dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>
              <time dateTime={queue.created_at}>{dateFormat.format(new Date(queue.created_at))}</time>
            </dd>
          </div>
          <div>
            <dt>Queue id</dt>
            <dd>
              <code>{queue.id}</code>
            </dd>
          </div>
        </dl>
      </section>
    </div>
  );
}

function kindWords(kind: FieldKind): string {
  switch (kind.kind) {
    case 'scale':
      return `scale ${kind.options[0]}–${kind.options[kind.options.length - 1]}`;
    case 'choice':
    case 'multi': {
      const options = kind.options.map((option) => (option !== null && typeof option === 'object' ? JSON.stringify(option) : scalarText(option))).join(', ');
      return `${kind.kind === 'choice' ? 'one' : 'any'} of ${options}`;
    }
    case 'boolean':
      return 'yes or no';
    case 'text':
      return 'text';
    case 'number':
      return kind.integer ? 'whole number' : 'number';
    case 'json':
      return 'JSON';
  }
}

function leaseWords(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? '1 hour' : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? '1 minute' : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}
