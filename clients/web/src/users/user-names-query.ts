import type { LoupeClient } from '@loupe/client';
import { queryOptions } from '@tanstack/react-query';

/** The most ids `projects.users` takes in one request (a 400 beyond). */
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
      const chunks: string[][] = [];
      for (let start = 0; start < userIds.length; start += IDS_PER_REQUEST) chunks.push(userIds.slice(start, start + IDS_PER_REQUEST));
      const answers = await Promise.all(chunks.map((user_ids) => client.projects.users.query({ project_id: projectId, user_ids })));
      return new Map(answers.flatMap(({ users }) => users.map(({ user_id, username }) => [user_id, username] as const)));
    },
    // A username changes only through the admin tool; a reload shows the change.
    staleTime: 5 * 60_000,
  });
