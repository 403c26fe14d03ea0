import type { Role } from '@loupe/shared';

/** The caller of a request, as authentication found it: what every access check reads. */
export type AuthUser = {
  id: string;
  username: string;
  /** The API key the request was made with (limits that are per key, such as open event streams). */
  keyId: string;
  /** entity name → role */
  roles: ReadonlyMap<string, Role>;
};
