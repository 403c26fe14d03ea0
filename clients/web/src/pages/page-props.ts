import type { LoupeClient } from '@loupe/client';

/** What every signed-in page gets: the session's typed client, the session id (the key of its queries) and the project. */
export type PageProps = { client: LoupeClient; session: number; projectId: string };
export type QueuePageProps = PageProps & { queueId: string };
