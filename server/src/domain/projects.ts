import type { Project, ProjectQueryReq } from '@loupe/shared';
import type { AuthUser } from './auth-user.ts';
import { isoFromSql, sqlRows, storedBytes, type SqlScope } from '../db/sql.ts';
import { sql } from '../db/statement.ts';
import { requireAnswerFits } from './answer-budget.ts';
import { forbidden } from './errors.ts';

type ProjectRow = {
  id: string;
  entity: string;
  name: string;
  calls: number | string;
  queues: number | string;
  feedback: number | string;
  specs: number | string;
  calls_at: unknown;
  queues_at: unknown;
  feedback_at: unknown;
  specs_at: unknown;
};

/** Live rows of a project, and the earliest one's created_at, for each table that holds its data. */
const HOLDINGS = [
  { key: 'calls', table: 'calls', live: '' },
  { key: 'queues', table: 'annotation_queues', live: ' and t.deleted_at is null' },
  { key: 'feedback', table: 'feedback', live: '' },
  { key: 'specs', table: 'annotation_specs', live: '' },
] as const;

const COLUMNS = sql.raw(
  HOLDINGS.flatMap(({ key, table, live }) => [
    `(select count(*) from ${table} t where t.project_id = p.id${live}) as ${key}`,
    `(select min(t.created_at) from ${table} t where t.project_id = p.id${live}) as ${key}_at`,
  ]).join(',\n  '),
);

/** Field names, punctuation, counts and created_at of a project's JSON. */
const PROJECT_FRAME_BYTES = 160;

/**
 * `POST /projects/query`: the projects of the caller's entities (any role) that hold live data —
 * calls, queues not deleted, feedback or annotation specs — ordered by project_id. A project's
 * created_at is that of its earliest live record (a project row outlives its data).
 */
export async function queryProjects(db: SqlScope, { user, req, budget }: { user: AuthUser; req: ProjectQueryReq; budget: number }): Promise<Project[]> {
  if (req.entity !== undefined && !user.roles.has(req.entity)) throw forbidden(`You are not a member of entity "${req.entity}".`);
  const entities = req.entity !== undefined ? [req.entity] : [...user.roles.keys()];
  if (!entities.length) return [];
  // The list has no pages: one that would pass the answer's budget is refused before it is read.
  const [total] = await sqlRows<{ bytes: number | string | null }>(db,
    sql`select sum(${storedBytes(db, 'id')} * 2 + ${storedBytes(db, 'entity')} + ${storedBytes(db, 'name')} + ${sql.raw(String(PROJECT_FRAME_BYTES))}) as bytes
       from projects where entity in (${sql.list(entities)})`,
  );
  requireAnswerFits({ what: 'projects', bytes: total?.bytes ?? 0, budget, narrower: 'ask for one entity at a time' });
  // Counts and the earliest times per table: computed columns, which typed Kysely would not convert (see typedKysely).
  const rows = await sqlRows<ProjectRow>(db, sql`select p.id, p.entity, p.name,\n  ${COLUMNS}\nfrom projects p where p.entity in (${sql.list(entities)})`);
  const projects: Project[] = [];
  for (const row of rows) {
    const times = HOLDINGS.map(({ key }) => row[`${key}_at`]).filter((value) => value !== null && value !== undefined).map(isoFromSql);
    if (!times.length) continue;
    projects.push({
      project_id: row.id,
      entity: row.entity,
      name: row.name,
      created_at: times.sort()[0]!,
      counts: { calls: Number(row.calls), queues: Number(row.queues), feedback: Number(row.feedback) },
    });
  }
  // Code-unit order, the same on every database whatever its collation.
  return projects.sort((a, b) => (a.project_id < b.project_id ? -1 : a.project_id > b.project_id ? 1 : 0));
}
