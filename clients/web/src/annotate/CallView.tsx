import { memo } from 'react';
import type { Call } from './annotate-queries.ts';
import { fieldsOf, formatDuration, isChatMessage, isConversation, partText, valueAt, type ChatMessage } from './call-content.ts';
import { JsonTree } from './JsonTree.tsx';
import { Markdown } from './Markdown.tsx';
import type { JsonValue } from './rubric-fields.ts';

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/**
 * A recorded call for people: op name, start and duration, then the item's display fields (when it
 * has any), the inputs and the output. Chat messages read as a conversation, strings as Markdown,
 * everything else as a collapsible JSON tree. `other`: a call of the item's trace that is not the
 * item's call (framed differently).
 *
 * Memoized: the page re-renders on every key press and write; the call, its Markdown parsed again,
 * need not.
 */
export const CallView = memo(function CallView({ call, displayFields, headingId, other = false }: { call: Call; displayFields: string[]; headingId: string; other?: boolean }) {
  const duration = call.ended_at ? Date.parse(call.ended_at) - Date.parse(call.started_at) : null;
  const root = call as unknown as { [key: string]: JsonValue };
  return (
    <article className={other ? 'call call-other' : 'call'} aria-labelledby={headingId}>
      <header className="call-head">
        <h2 id={headingId} tabIndex={-1}>
          {call.op_name}
        </h2>
        <dl className="call-facts">
          <div>
            <dt>Started</dt>
            <dd>
              <time dateTime={call.started_at}>{timeFormat.format(new Date(call.started_at))}</time>
            </dd>
          </div>
          <div>
            <dt>Duration</dt>
            <dd>{duration === null ? 'not ended' : formatDuration(duration)}</dd>
          </div>
          <div>
            <dt>Call</dt>
            <dd>
              <code>{call.id}</code>
            </dd>
          </div>
        </dl>
      </header>
      {displayFields.length ? (
        <section className="call-part" aria-label="Display fields">
          <h3>Display fields</h3>
          {displayFields.map((path) => {
            const value = valueAt(root, path);
            return (
              <Field key={path} label={path}>
                {value === undefined ? <p className="muted">Not in this call.</p> : <Value value={value} />}
              </Field>
            );
          })}
        </section>
      ) : null}
      <Part title="Inputs" value={call.inputs} />
      <Part title="Output" value={call.output} />
      {call.exception ? (
        <section className="call-part" aria-label="Exception">
          <h3>Exception</h3>
          <pre className="exception">{call.exception}</pre>
        </section>
      ) : null}
    </article>
  );
});

function Part({ title, value }: { title: string; value: JsonValue }) {
  const fields = value === null ? null : fieldsOf(value);
  return (
    <section className="call-part" aria-label={title}>
      <h3>{title}</h3>
      {value === null ? (
        <p className="muted">None.</p>
      ) : fields ? (
        fields.length ? (
          fields.map(([name, field]) => (
            <Field key={name} label={name}>
              <Value value={field} />
            </Field>
          ))
        ) : (
          <p className="muted">Empty.</p>
        )
      ) : (
        <Value value={value} />
      )}
    </section>
  );
}

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="call-field">
      <h4 className="call-field-name">{label}</h4>
      {children}
    </div>
  );
}

/** One value, in the form that reads best. */
export function Value({ value }: { value: JsonValue }) {
  if (isConversation(value)) return <Conversation messages={value} />;
  if (isChatMessage(value)) return <Conversation messages={[value]} />;
  if (typeof value === 'string') return <Markdown text={value} />;
  return <JsonTree value={value} />;
}

function Conversation({ messages }: { messages: ChatMessage[] }) {
  return (
    <ol className="conversation">
      {messages.map((message, index) => {
        const { role, content, ...rest } = message;
        return (
          <li key={index} className={`message message-${role.replace(/[^a-z]/gi, '')}`}>
            <span className="message-role">{role}</span>
            {typeof content === 'string' ? (
              <Markdown text={content} />
            ) : Array.isArray(content) ? (
              content.map((part, partIndex) => {
                const text = partText(part);
                return text === null ? <JsonTree key={partIndex} value={part} /> : <Markdown key={partIndex} text={text} />;
              })
            ) : null}
            {Object.keys(rest).length ? <JsonTree value={rest} /> : null}
          </li>
        );
      })}
    </ol>
  );
}
