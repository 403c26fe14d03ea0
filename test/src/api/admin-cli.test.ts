import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, startServer, type RunningServer } from '@loupe/server';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { REPO_ROOT, runProcess, type ProcessRun } from '../harness/child-server.ts';
import { freshDatabase, type TestDatabase } from '../harness/databases.ts';
import { rest } from '../harness/http.ts';

const CLI = join(REPO_ROOT, 'server/src/admin/cli.ts');

type Run = ProcessRun;

// The tests are the steps of one story on one database and run in order.
describeEachBackend('admin command-line tool', (backend) => {
  let database: TestDatabase;
  let server: RunningServer | undefined;
  beforeAll(async () => {
    database = await freshDatabase(backend);
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });

  /** The tool as `npm run admin` runs it: from the repository root, on DATABASE_URL. */
  function admin(...args: string[]): Promise<Run> {
    return runProcess(process.execPath, [CLI, ...args], { DATABASE_URL: database.url, LOUPE_LOG_LEVEL: 'silent' });
  }

  /** The single JSON line a --json command prints. */
  function jsonLine(run: Run): Record<string, any> {
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!);
  }

  let alice: { user_id: string; username: string; api_key: string };
  let secondKey: { key_id: string; api_key: string };

  it('migrate --json on a new database lists every migration it applied', async () => {
    const run = await admin('migrate', '--json');
    const applied = jsonLine(run).applied as string[];
    expect(applied.length).toBeGreaterThanOrEqual(4);
    expect(applied[0]).toBe('Migration0001Foundation');
    expect(applied).toContain('Migration0004Feedback');
  });

  it('users create --json prints exactly one line with user_id, username and api_key', async () => {
    const run = await admin('users', 'create', 'alice', '--entity', 'acme', '--role', 'member', '--json');
    expect(run.stdout.endsWith('\n')).toBe(true);
    const created = jsonLine(run);
    expect(Object.keys(created).sort()).toEqual(['api_key', 'user_id', 'username']);
    expect(created.username).toBe('alice');
    expect(created.user_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(created.api_key).toMatch(/^lp_/);
    alice = created as typeof alice;
  });

  it('refuses to create the same user twice with exit code 1 and a message on stderr', async () => {
    const run = await admin('users', 'create', 'alice', '--entity', 'acme', '--role', 'member', '--json');
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/alice.*already exists/);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('creates, lists and revokes keys', async () => {
    const created = jsonLine(await admin('keys', 'create', 'alice', '--json'));
    expect(created).toMatchObject({ user_id: alice.user_id, username: 'alice', key_id: expect.any(String), api_key: expect.stringMatching(/^lp_/) });
    expect(created.api_key).not.toBe(alice.api_key);
    secondKey = { key_id: created.key_id, api_key: created.api_key };

    const listed = jsonLine(await admin('keys', 'list', 'alice', '--json'));
    expect(listed.keys).toHaveLength(2);
    for (const key of listed.keys) expect(key).toEqual({ key_id: expect.any(String), created_at: expect.any(String), revoked_at: null });
    expect(listed.keys.map((k: { key_id: string }) => k.key_id)).toContain(secondKey.key_id);
    // Key secrets are shown once, at creation, and never listed.
    expect(JSON.stringify(listed)).not.toContain(alice.api_key);
    expect(JSON.stringify(listed)).not.toContain(secondKey.api_key);

    const firstKeyId = listed.keys.find((k: { key_id: string }) => k.key_id !== secondKey.key_id).key_id;
    const revoked = await admin('keys', 'revoke', firstKeyId);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(firstKeyId);

    const after = jsonLine(await admin('keys', 'list', 'alice', '--json'));
    const byId = new Map(after.keys.map((k: { key_id: string }) => [k.key_id, k]));
    expect(byId.get(firstKeyId)).toMatchObject({ revoked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });
    expect(byId.get(secondKey.key_id)).toMatchObject({ revoked_at: null });
  });

  it('serves what the tool wrote: the revoked key is refused, the other accepted, memberships shown', async () => {
    server = await startServer(loadConfig({ DATABASE_URL: database.url, PORT: '0', LOUPE_CATALOG_WATCH: 'false', LOUPE_LOG_LEVEL: 'silent' }));
    expect((await rest(server, 'GET', '/me', { key: alice.api_key })).status).toBe(401);
    const me = await rest(server, 'GET', '/me', { key: secondKey.api_key });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ user_id: alice.user_id, username: 'alice', memberships: [{ entity: 'acme', role: 'member' }] });

    // A membership added while the server runs counts on the next request.
    const added = await admin('members', 'add', 'alice', 'other', '--role', 'viewer');
    expect(added.code, added.stderr).toBe(0);
    const again = await rest(server, 'GET', '/me', { key: secondKey.api_key });
    expect(again.body.memberships).toEqual([
      { entity: 'acme', role: 'member' },
      { entity: 'other', role: 'viewer' },
    ]);
  });

  it('users create --role annotator and members add --role annotator make annotators, whom the server serves as such', async () => {
    const annotator = jsonLine(await admin('users', 'create', 'ann', '--entity', 'acme', '--role', 'annotator', '--json'));
    const me = await rest(server!, 'GET', '/me', { key: annotator.api_key });
    expect(me.body.memberships).toEqual([{ entity: 'acme', role: 'annotator' }]);
    // An annotator works queues and writes nothing else (contract 5.11).
    const queue = await rest(server!, 'POST', '/annotation_queues', { key: annotator.api_key, body: { project_id: 'acme/p', name: 'q' } });
    expect(queue.status).toBe(403);
    expect(queue.body.reason).toBe('Your role in entity "acme" is annotator, which works the annotation queues open to it and nothing else.');

    const changed = await admin('members', 'add', 'alice', 'other', '--role', 'annotator', '--json');
    expect(jsonLine(changed)).toEqual({ user_id: alice.user_id, username: 'alice', entity: 'other', role: 'annotator' });
    const again = await rest(server!, 'GET', '/me', { key: secondKey.api_key });
    expect(again.body.memberships).toEqual([
      { entity: 'acme', role: 'member' },
      { entity: 'other', role: 'annotator' },
    ]);
  });

  it('users create of four users into one new entity at once: each exits 0 and is its member', async () => {
    // Each run finds no entity and inserts it: the first's insert wins, the others insert nothing.
    const runs = await Promise.all([1, 2, 3, 4].map((n) => admin('users', 'create', `racer${n}`, '--entity', 'newco', '--role', 'viewer', '--json')));
    for (const run of runs) {
      const created = jsonLine(run);
      const me = await rest(server!, 'GET', '/me', { key: created.api_key });
      expect(me.body.memberships).toEqual([{ entity: 'newco', role: 'viewer' }]);
    }
  });

  it('demo loads a data set every page means something on, and a second run stores nothing new', async () => {
    const demo = jsonLine(await admin('demo', '--json'));
    const body = (path: string, json: unknown) => rest(server!, 'POST', path, { key: demo.api_key, body: json }).then((reply) => {
      expect(reply.status, reply.text).toBe(200);
      return reply.body;
    });
    const project_id = 'demo/chatbot';
    const { queues } = await body('/annotation_queues/query', { project_id });
    expect(queues.map((q: { name: string }) => q.name)).toEqual(['Tone check (not started)', 'Agent runs', 'Support answers to review']);
    const review = queues[2];
    // A rubric of three kinds of fields, and three annotators who mostly agree: each spec has an alpha.
    const { agreement } = await body(`/annotation_queues/${review.id}/agreement`, { project_id });
    expect(agreement.map((a: { name: string; level: string }) => [a.name, a.level])).toEqual([['helpfulness', 'ordinal'], ['correct', 'nominal'], ['tone', 'nominal']]);
    for (const spec of agreement) {
      expect(spec.annotators).toHaveLength(3);
      expect(spec.alpha).toBeGreaterThan(0.3);
      expect(spec.alpha).toBeLessThan(1);
      expect(spec.disagreements.length).toBeGreaterThan(0);
    }
    // Multi-turn chats, and an agent run of five calls, one of which failed.
    const { calls } = await body('/calls/query', { project_id, filter: { trace_ids: ['demo-trace-agent-1'] } });
    expect(calls.map((c: { op_name: string }) => c.op_name)).toEqual(['agent.run', 'llm.plan', 'tool.lookup_order', 'tool.lookup_order', 'llm.answer']);
    expect(calls.filter((c: { exception: string | null }) => c.exception !== null)).toHaveLength(1);
    const chat = (await rest(server!, 'GET', `/calls/demo-chat-1?project_id=${project_id}`, { key: demo.api_key })).body.call;
    expect(chat.inputs.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    const before = await body('/feedback/query', { project_id, limit: 1000 });

    const again = jsonLine(await admin('demo', '--json'));
    expect(again.user_id).toBe(demo.user_id);
    expect((await body('/annotation_queues/query', { project_id })).queues).toHaveLength(3);
    expect((await body('/feedback/query', { project_id, limit: 1000 })).result).toHaveLength(before.result.length);
  });

  it('users set-password reads the password from standard input; the user then signs in with it', async () => {
    const password = 'a long enough passphrase';
    const run = await runProcess(process.execPath, [CLI, 'users', 'set-password', 'alice', '--json'], { DATABASE_URL: database.url, LOUPE_LOG_LEVEL: 'silent' }, { stdin: `${password}\n` });
    expect(jsonLine(run)).toEqual({ user_id: alice.user_id, username: 'alice' });
    const weak = await runProcess(process.execPath, [CLI, 'users', 'set-password', 'alice'], { DATABASE_URL: database.url, LOUPE_LOG_LEVEL: 'silent' }, { stdin: 'password1234\n' });
    expect(weak.code).toBe(1);
    expect(weak.stderr).toContain('one of the most common passwords');
    server ??= await startServer(loadConfig({ DATABASE_URL: database.url, PORT: '0', LOUPE_LOG_LEVEL: 'silent', LOUPE_CATALOG_WATCH: 'false' }));
    const signIn = await rest(server, 'POST', '/auth/sign-in', { body: { username: 'alice', password } });
    expect(signIn.status, signIn.text).toBe(200);
    expect(signIn.body.user).toMatchObject({ user_id: alice.user_id, username: 'alice' });
  });

  it('migrate --json reports nothing to apply on an up-to-date database', async () => {
    const run = await admin('migrate', '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('{"applied":[]}\n');
  });

  it('exits 2 with the usage on stderr for an unknown command or a bad role', async () => {
    const unknown = await admin('frobnicate', '--json');
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toContain('frobnicate');
    expect(unknown.stderr).toMatch(/usage:.*\n.*users create <username>/);

    const owner = await admin('users', 'create', 'bob', '--entity', 'acme', '--role', 'owner', '--json');
    expect(owner.code).toBe(2);
    expect(owner.stdout).toBe('');
    expect(owner.stderr).toMatch(/--role must be one of admin, member, annotator, viewer/);
    expect(owner.stderr).toContain('usage:');
    // Nothing was created.
    const bob = await admin('keys', 'list', 'bob', '--json');
    expect(bob.code).toBe(1);
    expect(bob.stderr).toMatch(/no user named "bob"/);

    if (backend === 'sqlite') {
      // A usage error is found before the database is opened: a typo creates no database file.
      const untouched = join(mkdtempSync(join(tmpdir(), 'loupe-cli-')), 'never.db');
      const typo = await runProcess(process.execPath, [CLI, 'user', 'create', 'x'], { DATABASE_URL: `sqlite:${untouched}` });
      expect(typo.code).toBe(2);
      expect(existsSync(untouched)).toBe(false);
    }

    const noCommand = await admin();
    expect(noCommand.code).toBe(2);
    expect(noCommand.stderr).toContain('usage:');
  });

  it('--help, -h and help print the usage on stdout and exit 0, without opening the database', async () => {
    for (const args of [['--help'], ['-h'], ['help'], ['users', 'create', '--help']]) {
      const run = await admin(...args);
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout).toMatch(/^usage: npm run --silent admin -- <command>\n/);
      expect(run.stdout).toContain('users create <username>');
    }
    if (backend === 'sqlite') {
      const untouched = join(mkdtempSync(join(tmpdir(), 'loupe-cli-')), 'never.db');
      const help = await runProcess(process.execPath, [CLI, '--help'], { DATABASE_URL: `sqlite:${untouched}` });
      expect(help.code).toBe(0);
      expect(existsSync(untouched)).toBe(false);
    }
    // "help" is a command only on its own.
    const extra = await admin('help', 'users');
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('unknown command "help users"');
  });
});
