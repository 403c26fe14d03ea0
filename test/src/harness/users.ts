import { createUser as adminCreateUser, unitOfWork } from '@loupe/server';
import type { TestServer } from './server.ts';

export type CreatedKeyForTest = { key_id: string; user_id: string; username: string; api_key: string };

let counter = 0;

/** A new user with a key, made the way the admin tool makes it, on the server's own database. */
export async function createUser(
  server: TestServer,
  options: { entity?: string; role?: 'admin' | 'member' | 'annotator' | 'viewer'; username?: string } = {},
): Promise<CreatedKeyForTest> {
  const username = options.username ?? `user${process.pid}x${++counter}`;
  return adminCreateUser(unitOfWork(server.server.services.orm), username, {
    ...(options.entity ? { entity: options.entity } : {}),
    ...(options.role ? { role: options.role } : {}),
  });
}
