import { useSyncExternalStore } from 'react';

// The API key lives in this tab's sessionStorage only: never in a URL, a query key or a log.
const STORAGE_KEY = 'loupe.apiKey';

export type Session = { apiKey: string; id: number } | null;

let current: Session = null;
let nextId = 1;
const listeners = new Set<() => void>();

function read(): Session {
  const apiKey = sessionStorage.getItem(STORAGE_KEY);
  if (!apiKey) return null;
  if (current?.apiKey !== apiKey) current = { apiKey, id: nextId++ };
  return current;
}

function changed(): void {
  for (const listener of listeners) listener();
}

export function signIn(apiKey: string): void {
  sessionStorage.setItem(STORAGE_KEY, apiKey);
  changed();
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
  current = null;
  changed();
}

export function useSession(): Session {
  return useSyncExternalStore((listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, read);
}
