import { inspect, parseArgs } from 'node:util';
import { ROLES, type Role } from '@loupe/shared';
import { ConfigError, loadConfig } from '../config.ts';
import { DomainError } from '../domain/errors.ts';
import { secretMasker } from '../db/database-url.ts';
import { unitOfWork, migrate, openDatabase, type Orm } from '../db/orm.ts';
import { AdminError, addMember, createKey, createUser, listKeys, revokeKey } from './commands.ts';
import { loadDemo } from './demo.ts';
import { setPassword } from '../auth/set-password.ts';

const USAGE = `usage: npm run --silent admin -- <command>
  users create <username> [--entity <entity>] [--role admin|member|annotator|viewer] [--json]
  users set-password <username> [--json]   (reads the password from standard input)
  keys create <username> [--json]
  keys list <username> [--json]
  keys revoke <key-id> [--json]
  members add <username> <entity> [--role admin|member|annotator|viewer] [--json]
  migrate [--json]
  demo [--json]
  help (or --help, -h)
The database is DATABASE_URL's (default sqlite:./data/loupe.db). --json prints one JSON line;
--silent keeps npm from printing its own lines before it.`;

class UsageError extends Error {}

type Output = { value: Record<string, unknown>; human: string };
/** A checked command line, ready to run against an open database. */
type Command = { name: string; run(orm: Orm): Promise<Output> };

function role(value: string | undefined): Role | undefined {
  if (value === undefined) return undefined;
  if (!(ROLES as readonly string[]).includes(value)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  return value as Role;
}

/** Reads the command line without touching the database, so a typo costs nothing. */
function parse(argv: string[]): { command: Command; json: boolean } | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        entity: { type: 'string' },
        role: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help || (positionals.length === 1 && positionals[0] === 'help')) return 'help';
  const [group, action, ...rest] = positionals;
  const name = `${group ?? ''} ${action ?? ''}`.trim();
  const args = (count: number): string[] => {
    if (rest.length !== count) throw new UsageError(`"${name}" takes ${count} argument${count === 1 ? '' : 's'}`);
    return rest;
  };
  const memberRole = role(values.role);
  const command = (run: Command['run']): Command => ({ name, run });
  const json = values.json ?? false;
  switch (name) {
    case 'users create': {
      const [username] = args(1) as [string];
      return {
        json,
        command: command(async (orm) => {
          const created = await createUser(unitOfWork(orm), username, { entity: values.entity, role: memberRole });
          const { user_id, api_key } = created;
          return {
            value: { user_id, username: created.username, api_key },
            human: `created user ${created.username} (${user_id})\nAPI key (shown once): ${api_key}\nkey id: ${created.key_id}`,
          };
        }),
      };
    }
    case 'users set-password': {
      const [username] = args(1) as [string];
      return {
        json,
        command: command(async (orm) => {
          const password = await passwordFromStdin();
          const set = await setPassword(orm.em, { username, password });
          return { value: set, human: `password set for ${set.username}; their sessions have ended` };
        }),
      };
    }
    case 'keys create': {
      const [username] = args(1) as [string];
      return {
        json,
        command: command(async (orm) => {
          const created = await createKey(unitOfWork(orm), username);
          return { value: created, human: `API key for ${created.username} (shown once): ${created.api_key}\nkey id: ${created.key_id}` };
        }),
      };
    }
    case 'keys list': {
      const [username] = args(1) as [string];
      return {
        json,
        command: command(async (orm) => {
          const keys = await listKeys(unitOfWork(orm), username);
          const lines = keys.map((k) => `${k.key_id}  created ${k.created_at}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}`);
          return { value: { keys }, human: lines.join('\n') || 'no keys' };
        }),
      };
    }
    case 'keys revoke': {
      const [keyId] = args(1) as [string];
      return {
        json,
        command: command(async (orm) => {
          const revoked = await revokeKey(unitOfWork(orm), keyId);
          return { value: revoked, human: `revoked ${revoked.key_id} at ${revoked.revoked_at}` };
        }),
      };
    }
    case 'members add': {
      const [username, entity] = args(2) as [string, string];
      return {
        json,
        command: command(async (orm) => {
          const member = await addMember(unitOfWork(orm), username, entity, memberRole ?? 'member');
          return { value: member, human: `${member.username} is ${member.role} of ${member.entity}` };
        }),
      };
    }
    case 'migrate':
      args(0);
      return {
        json,
        command: command(async (orm) => {
          const applied = await migrate(orm);
          return { value: { applied }, human: applied.length ? `applied ${applied.join(', ')}` : 'database is up to date' };
        }),
      };
    case 'demo':
      args(0);
      return {
        json,
        command: command(async (orm) => {
          const demo = await loadDemo(unitOfWork(orm));
          return {
            value: demo,
            human: `demo data loaded: user ${demo.username}, project ${demo.project_id}, queue ${demo.queue_id}\nAPI key (shown once): ${demo.api_key}`,
          };
        }),
      };
    default:
      throw new UsageError(name ? `unknown command "${positionals.join(' ')}"` : 'no command given');
  }
}

/**
 * The password on standard input: its first line (a trailing newline is not part of it), so that
 * `printf '%s' "$PASSWORD" | ...`, `echo "$PASSWORD" | ...` and a typed line all work.
 */
async function passwordFromStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('password: ');
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.includes('\n') || text.length > 4096) break;
  }
  const line = text.split(/\r?\n/)[0] ?? '';
  if (!line) throw new AdminError('no password on standard input');
  return line;
}

// Nothing the tool prints shows the database password (see database-url.ts).
const mask = secretMasker(process.env.DATABASE_URL);
let orm: Orm | undefined;
try {
  const parsed = parse(process.argv.slice(2));
  if (parsed === 'help') {
    console.log(USAGE);
  } else {
    const { command, json } = parsed;
    const config = loadConfig();
    // Every command but `migrate` migrates on opening; `migrate` does it itself to report what ran.
    // Only the connection is bounded in time: a command (a migration) may take as long as it needs.
    orm = await openDatabase(config.databaseUrl, 2, {
      migrateNow: command.name !== 'migrate',
      timeouts: { connectMs: config.dbTimeouts.connectMs },
    });
    const output = await command.run(orm);
    console.log(json ? JSON.stringify(output.value) : output.human);
  }
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`loupe admin: ${error.message}\n${USAGE}`);
    process.exitCode = 2;
  } else if (error instanceof AdminError || error instanceof ConfigError || error instanceof DomainError) {
    console.error(mask(`loupe admin: ${error.message}`));
    process.exitCode = 1;
  } else {
    console.error(mask(`loupe admin: failed: ${inspect(error)}`));
    process.exitCode = 1;
  }
} finally {
  await orm?.close(true);
}
