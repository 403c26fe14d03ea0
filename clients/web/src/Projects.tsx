import type { LoupeClient } from '@loupe/client';
import { useQuery } from '@tanstack/react-query';
import { messageOf, meQuery, projectsQuery, type Project } from './api.ts';
import { Link, Navigate } from '@tanstack/react-router';
import { annotatorOnly } from './access.ts';
import { links } from './routes.ts';
import { ScrollTable } from './queue/ScrollTable.tsx';

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/**
 * The caller's entities (with roles) and the projects of those entities that hold data. An
 * annotator (in every entity) lands on My queues instead: projects are not theirs to browse.
 */
export function Projects({ client, session }: { client: LoupeClient; session: number }) {
  const me = useQuery(meQuery(client, session));
  const annotator = annotatorOnly(me.data);
  const projects = useQuery({ ...projectsQuery(client, session), enabled: me.isSuccess && !annotator });
  if (annotator) return <Navigate {...links.mine()} replace />;
  return (
    <>
      <h1>Projects</h1>
      <section aria-labelledby="entities-title">
        <h2 id="entities-title">Your entities</h2>
        {me.isPending ? <p>Loading…</p> : me.isError ? <p className="error" role="alert">{messageOf(me.error)}</p> : me.data.memberships.length ? (
          <ul className="entities">
            {me.data.memberships.map(({ entity, role }) => (
              <li key={entity}>
                <strong>{entity}</strong> <span className="role">{role}</span>
                {role === 'admin' ? (
                  <>
                    {' '}
                    <Link className="members-link" {...links.members(entity)} aria-label={`Members of ${entity}`}>
                      Members
                    </Link>
                  </>
                ) : null}
              </li>
            ))}
          </ul>
        ) : (
          <p>You belong to no entity yet: ask an administrator to add you to one.</p>
        )}
      </section>
      <section aria-labelledby="projects-title">
        <h2 id="projects-title">Projects with data</h2>
        {projects.isPending ? <p>Loading…</p> : projects.isError ? <p className="error" role="alert">{messageOf(projects.error)}</p> : projects.data.length ? (
          <ProjectTable projects={projects.data} />
        ) : (
          <p>No project holds data yet. A project appears here once calls, queues, feedback or annotation specs are stored in it.</p>
        )}
      </section>
    </>
  );
}

function ProjectTable({ projects }: { projects: Project[] }) {
  return (
    <ScrollTable label="Projects of your entities">
      <table>
        <caption className="visually-hidden">Projects of your entities</caption>
        <thead>
          <tr>
            <th scope="col">Project</th>
            <th scope="col">Entity</th>
            <th scope="col" className="number">Calls</th>
            <th scope="col" className="number">Queues</th>
            <th scope="col" className="number">Feedback</th>
            <th scope="col">Since</th>
          </tr>
        </thead>
        <tbody>
          {projects.map((project) => (
            <tr key={project.project_id}>
              <th scope="row">
                <Link {...links.project(project.project_id)}>{project.name}</Link>
              </th>
              <td>{project.entity}</td>
              <td className="number">{project.counts.calls}</td>
              <td className="number">{project.counts.queues}</td>
              <td className="number">{project.counts.feedback}</td>
              <td>
                <time dateTime={project.created_at}>{dateFormat.format(new Date(project.created_at))}</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollTable>
  );
}
