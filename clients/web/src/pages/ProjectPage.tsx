import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { canWrite, roleIn } from '../access.ts';
import { messageOf, meQuery } from '../api.ts';
import { CallBrowser } from '../project/CallBrowser.tsx';
import { QueueSection } from '../project/QueueSection.tsx';
import { READ_ONLY_REASON, type Access } from '../project/ReadOnlyNote.tsx';
import { SpecSection } from '../project/SpecSection.tsx';
import { Link } from '@tanstack/react-router';
import { links } from '../routes.ts';
import { NotForAnnotators } from './NotForAnnotators.tsx';
import type { PageProps } from './page-props.ts';
import '../project/project.css';

const NOT_A_MEMBER = 'You are not a member of this project’s entity: ask an administrator to add you.';

/**
 * A project: its queues with their progress (live), its annotation specs, and its calls, which
 * members add to queues. Viewers see all of it; every control that would change something is
 * disabled for them and names the reason.
 */
export function ProjectPage({ client, session, projectId }: PageProps) {
  const me = useQuery(meQuery(client, session));
  const role = roleIn(me.data, projectId);
  const writable = canWrite(role);
  const [notice, setNotice] = useState<string>();
  // Until the caller's role is read, nothing offers to write (and nothing says why yet).
  const reason = !me.isSuccess || writable ? null : role ? READ_ONLY_REASON : NOT_A_MEMBER;
  const access = (section: string): Access => ({ writable, reason, noteId: `read-only-${section}` });
  if (role === 'annotator') return <NotForAnnotators />;

  return (
    <div className="project">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link {...links.projects()}>Projects</Link> / {projectId}
      </nav>
      <h1>Project {projectId}</h1>
      {me.isError ? (
        <p className="error" role="alert">
          {messageOf(me.error)}
        </p>
      ) : me.isSuccess ? (
        <p className="project-role">
          {role ? (
            <>
              Your role: <strong>{role}</strong>.{writable ? null : ` ${READ_ONLY_REASON}`}
            </>
          ) : (
            NOT_A_MEMBER
          )}
        </p>
      ) : null}
      {/* Webhooks are for members and admins (their urls may carry a receiver's credentials). */}
      {writable ? (
        <ul className="project-links">
          <li>
            <Link className="button-link" {...links.webhooks(projectId)}>
              Webhooks
            </Link>
          </li>
        </ul>
      ) : null}
      <div role="status" className="notices">
        {notice ? <p className="notice">{notice}</p> : null}
      </div>
      <QueueSection client={client} session={session} projectId={projectId} access={access('queues')} onNotice={setNotice} />
      <SpecSection client={client} session={session} projectId={projectId} access={access('specs')} />
      <CallBrowser client={client} session={session} projectId={projectId} access={access('calls')} />
    </div>
  );
}
