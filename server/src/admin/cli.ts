import { parseArgs } from 'node:util';
import { ROLES, type Role } from '@loupe/shared';
import { ConfigError, loadConfig } from '../config.ts';
import { DomainError } from '../domain/errors.ts';
import { forkEm, migrate, openDatabase, type Orm } from '../db/orm.ts';
import { AdminError, addMember, createKey, createUser, listKeys, revokeKey } from './commands.ts';
import { loadDemo } from './demo.ts';

const USAGE = `usage: npm run admin -- <command>
  users create <username> [--entity <entity>] [--role admin|member|viewer] [--json]
  keys create <username> [--json]
  keys list <username> [--json]
  keys revoke <key-id> [--json]
  members add <username> <entity> [--role admin|member|viewer] [--json]
  migrate [--json]
  demo [--json]
The database is DATABASE_URL's (default sqlite:./data/loupe.db).`;

class UsageError extends Error {}

function role(value: string | undefined): Role | undefined {
  if (value === undefined) return undefined;
  if (!(ROLES as readonly string[]).includes(value)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  return value as Role;
}

function print(json: boolean, value: Record<string, unknown>, human: string): void {
  console.log(json ? JSON.stringify(value) : human);
}

async function run(orm: Orm, argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { entity: { type: 'string' }, role: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const json = values.json ?? false;
  const em = forkEm(orm);
  const [group, action, ...rest] = positionals;
  const args = (count: number) => {
    if (rest.length !== count) throw new UsageError(`"${group} ${action}" takes ${count} argument${count === 1 ? '' : 's'}`);
    return rest as string[];
  };
  switch (`${group} ${action ?? ''}`.trim()) {
    case 'users create': {
      const [username] = args(1);
      const created = await createUser(em, username!, { entity: values.entity, role: role(values.role) });
      const { user_id, username: name, api_key } = created;
      return print(json, { user_id, username: name, api_key }, `created user ${name} (${user_id})\nAPI key (shown once): ${api_key}\nkey id: ${created.key_id}`);
    }
    case 'keys create': {
      const [username] = args(1);
      const created = await createKey(em, username!);
      return print(json, created, `API key for ${created.username} (shown once): ${created.api_key}\nkey id: ${created.key_id}`);
    }
    case 'keys list': {
      const [username] = args(1);
      const keys = await listKeys(em, username!);
      return print(json, { keys }, keys.map((k) => `${k.key_id}  created ${k.created_at}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`).join('\n') || 'no keys');
    }
    case 'keys revoke': {
      const [keyId] = args(1);
      const revoked = await revokeKey(em, keyId!);
      return print(json, revoked, `revoked ${revoked.key_id} at ${revoked.revoked_at}`);
    }
    case 'members add': {
      const [username, entity] = args(2);
      const member = await addMember(em, username!, entity!, role(values.role) ?? 'member');
      return print(json, member, `${member.username} is ${member.role} of ${member.entity}`);
    }
    case 'migrate': {
      const applied = await migrate(orm);
      return print(json, { applied }, applied.length ? `applied ${applied.join(', ')}` : 'database is up to date');
    }
    case 'demo': {
      const demo = await loadDemo(em);
      return print(json, demo, `demo data loaded: user ${demo.username}, project ${demo.project_id}, queue ${demo.queue_id}\nAPI key (shown once): ${demo.api_key}`);
    }
    default:
      throw new UsageError(group ? `unknown command "${positionals.join(' ')}"` : 'no command given');
  }
}

let orm: Orm | undefined;
try {
  const config = loadConfig();
  // Opening the database applies pending migrations, so `migrate` reports what it applied itself.
  orm = await openDatabase(config.databaseUrl, 2);
  await run(orm, process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
    console.error(`loupe admin: ${error.message}\n${USAGE}`);
    process.exitCode = 2;
  } else if (error instanceof AdminError || error instanceof ConfigError || error instanceof DomainError) {
    console.error(`loupe admin: ${error.message}`);
    process.exitCode = 1;
  } else {
    throw error;
  }
} finally {
  await orm?.close(true);
}
