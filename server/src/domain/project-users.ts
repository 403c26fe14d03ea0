import { splitProjectId, type ProjectUser, type ProjectUsersReq } from '@loupe/shared';
import { placeholders, sqlRows, type SqlScope } from '../db/sql.ts';

/**
 * `POST /projects/users`: the usernames of user ids that a project's data mentions, for whoever may
 * read the project. Only users related to the project are named: members of its entity (any role)
 * and users whose progress or feedback is recorded in it (a former member's annotations keep their
 * name). Any other id, known or not, is left out of the answer, so an answer never tells whether an
 * unrelated user exists.
 */
export async function projectUsers(db: SqlScope, req: ProjectUsersReq): Promise<ProjectUser[]> {
  const ids = [...new Set(req.user_ids)];
  if (!ids.length) return [];
  const { entity } = splitProjectId(req.project_id);

  const known = await sqlRows<{ id: string; username: string; role: string | null }>(db,
    `select u.id, u.username, m.role from users u
       left join memberships m on m.user_id = u.id and m.entity = ?
      where u.id in (${placeholders(ids.length)})`,
    [entity, ...ids],
  );
  const related = new Set(known.filter((row) => row.role !== null).map((row) => row.id));

  // Ids of no member: named only when their user wrote feedback or progress here. Index seeks only
  // (feedback_user_idx; progress per queue of the project and annotator), so a list of members (the
  // usual request) costs one lookup. Unknown ids go through the same query as unrelated users, so
  // that the work done does not tell them apart either.
  const others = ids.filter((id) => !related.has(id));
  if (others.length) {
    // Two semi-joins, not one `exists … or exists …`: PostgreSQL cannot turn an `or` of subqueries
    // into joins and scanned the project's feedback instead (95 ms against 0.2 ms on 300,000 records).
    const list = placeholders(others.length);
    const writers = await sqlRows<{ id: string }>(db,
      `select u.id from users u
        where u.id in (${list}) and exists (select 1 from feedback f where f.project_id = ? and f.svc_user_id = u.id)
       union
       select u.id from users u
        where u.id in (${list}) and exists (select 1 from annotation_queues q join annotation_item_progress p on p.queue_id = q.id
                                             where q.project_id = ? and p.annotator_user_id = u.id)`,
      [...others, req.project_id, ...others, req.project_id],
    );
    for (const row of writers) related.add(row.id);
  }

  const names = new Map(known.map((row) => [row.id, row.username]));
  return ids.filter((id) => related.has(id)).map((id) => ({ user_id: id, username: names.get(id)! }));
}
