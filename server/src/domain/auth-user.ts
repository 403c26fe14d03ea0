import type { Role } from '@loupe/shared';

/** The caller of a request, as authentication found it: what every access check reads. */
export type AuthUser = {
  id: string;
  username: string;
  /**
   * The API key the request was made with, or `session:<id>` for a session (limits that are per
   * key, such as open event streams).
   */
  keyId: string;
  /** How the request was authenticated: a key (programs) or a session cookie (people, contract 5.12). */
  via: 'key' | 'session';
  /** entity name → role */
  roles: ReadonlyMap<string, Role>;
};
