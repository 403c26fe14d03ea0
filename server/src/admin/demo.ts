import type { Em } from '../db/orm.ts';
import { ensureProject } from '../domain/access.ts';
import { User } from '../db/entities.ts';
import { createKey, createUser } from './commands.ts';

const DEMO_USER = 'demo';
const DEMO_PROJECT = 'demo/chatbot';

/** A small data set to try the API with: user `demo`, member of entity `demo`, project `demo/chatbot`. */
export async function loadDemo(em: Em) {
  const existing = await em.findOne(User, { username: DEMO_USER });
  const key = existing ? await createKey(em, DEMO_USER) : await createUser(em, DEMO_USER, { entity: 'demo', role: 'admin' });
  await ensureProject(em, DEMO_PROJECT);
  return { user_id: key.user_id, username: key.username, api_key: key.api_key, project_id: DEMO_PROJECT };
}
