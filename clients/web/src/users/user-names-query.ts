import type { LoupeClient } from '@loupe/client';
import { queryOptions } from '@tanstack/react-query';

/** Ids per request: the most the server takes (a long list goes as a POST, see @loupe/client). */
const IDS_PER_REQUEST = 1000;

/**
 * The usernames of user ids a project's data mentions, by user id. Ids the server does not name
 * (unknown, or unrelated to the project) are absent. Keyed under ['session', <id>] like every
 * signed-in query; `userIds` should be sorted, so that the same ids make the same key.
 */
export const userNamesQuery = (client: LoupeClient, session: number, projectId: string, userIds: readonly string[]) =>
  queryOptions({
    queryKey: ['session', session, 'user-names', projectId, userIds],
    queryFn: async (): Promise<ReadonlyMap<string, string>> => {
      const names = new Map<string, string>();
      for (let start = 0; start < userIds.length; start += IDS_PER_REQUEST) {
        const { users } = await client.projects.users.query({ project_id: projectId, user_ids: userIds.slice(start, start + IDS_PER_REQUEST) });
        for (const { user_id, username } of users) names.set(user_id, username);
      }
      return names;
    },
    // A username changes only through the admin tool; a reload shows the change.
    staleTime: 5 * 60_000,
  });
