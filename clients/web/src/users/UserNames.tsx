import type { LoupeClient } from '@loupe/client';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { userNamesQuery } from './user-names-query.ts';

type UserNames = {
  /** The username of a user id, once known. */
  nameOf: (userId: string) => string | undefined;
  /** Tells the page that it shows this user id, so that its name is asked for. */
  mention: (userId: string) => void;
};

// Outside a provider no name is known, and ids are shown as they are.
const UserNamesContext = createContext<UserNames>({ nameOf: () => undefined, mention: () => {} });

/**
 * Names the users a page shows: every user id mentioned under it (by {@link useUserName}) is asked
 * for in one request, renewed as a whole when a new id appears (names already shown stay while it
 * runs).
 */
export function UserNamesProvider({ client, session, projectId, children }: { client: LoupeClient; session: number; projectId: string; children: ReactNode }) {
  const [ids, setIds] = useState<readonly string[]>([]);
  // Ids mentioned in one render arrive together (React batches the updates): one request for all.
  const mention = useCallback((userId: string) => setIds((current) => (current.includes(userId) ? current : [...current, userId].sort())), []);
  const names = useQuery({ ...userNamesQuery(client, session, projectId, ids), enabled: ids.length > 0, placeholderData: keepPreviousData });
  const known = names.data;
  const value = useMemo<UserNames>(() => ({ nameOf: (userId) => known?.get(userId), mention }), [known, mention]);
  return <UserNamesContext.Provider value={value}>{children}</UserNamesContext.Provider>;
}

/** The username of a user id shown on the page, or undefined while unknown (or not to be named). */
export function useUserName(userId: string | undefined): string | undefined {
  const { nameOf, mention } = useContext(UserNamesContext);
  useEffect(() => {
    if (userId !== undefined) mention(userId);
  }, [userId, mention]);
  return userId === undefined ? undefined : nameOf(userId);
}
