import type { LoupeClient } from '@loupe/client';
import { useQuery } from '@tanstack/react-query';
import { messageOf } from '../api.ts';
import { projectSpecsQuery } from './project-queries.ts';
import type { Access } from './ReadOnlyNote.tsx';
import { SpecForm } from './SpecForm.tsx';
import { SpecLabel } from './SpecLabel.tsx';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** The project's annotation specs, and a form that builds and stores a new one. */
export function SpecSection({ client, session, projectId, access }: { client: LoupeClient; session: number; projectId: string; access: Access }) {
  const specs = useQuery(projectSpecsQuery(client, session, projectId));
  return (
    <section className="project-section" aria-labelledby="specs-title">
      <h2 id="specs-title">Annotation specs</h2>
      <p className="muted">The fields of a queue's rubric: each one a JSON Schema. The same name and content always give the same ref.</p>
      {specs.isPending ? (
        <p>Loading…</p>
      ) : specs.isError ? (
        <p className="error" role="alert">
          {messageOf(specs.error)}
        </p>
      ) : specs.data.length ? (
        <ul className="spec-list">
          {specs.data.map((spec) => (
            <li key={spec.ref}>
              <details>
                <summary>
                  <SpecLabel spec={spec} />
                  {spec.description ? <span className="muted"> — {spec.description}</span> : null}
                </summary>
                <p className="spec-meta">
                  <code>{spec.ref}</code> · created <time dateTime={spec.created_at}>{dateFormat.format(new Date(spec.created_at))}</time>
                </p>
                <pre className="schema">{JSON.stringify(spec.field_schema, null, 2)}</pre>
              </details>
            </li>
          ))}
        </ul>
      ) : (
        <p>No annotation specs yet.</p>
      )}
      <SpecForm client={client} session={session} projectId={projectId} access={access} />
    </section>
  );
}
