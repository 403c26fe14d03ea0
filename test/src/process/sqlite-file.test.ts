import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserViaCli, startChildServer, type ChildServer } from '../harness/child-server.ts';
import { rest } from '../harness/http.ts';
import { addItems, claim, createQueue, createSomeCalls, progress, queryItems, queueWithItems } from '../harness/queues.ts';

// One SQLite file, one server process: what happens around it. The server runs as its own
// process (as in production), so that the test process can hold SQLite's locks on the same file
// with its own connection, as the admin tool or a second server would.

const HOLD_MS = 200;
let sequence = 0;

/**
 * Another connection takes the file's write lock (begin immediate, one real write) and commits
 * `ms` later, as the admin tool does while it writes. Resolves once it has committed.
 */
function holdWriteLock(path: string, ms = HOLD_MS): Promise<void> {
  const db = new DatabaseSync(path);
  db.exec('pragma busy_timeout = 5000');
  db.exec('begin immediate');
  db.prepare('insert into entities (name, created_at) values (?, ?)').run(`holder-${process.pid}-${++sequence}`, Date.now());
  return sleep(ms).then(() => {
    db.exec('commit');
    db.close();
  });
}

function count(path: string, sql: string, ...params: (string | number)[]): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return Number((db.prepare(sql).get(...params) as { n: number }).n);
  } finally {
    db.close();
  }
}

let chattrReason = '';
/** Whether `chattr +i` works on files in the temp folder (root and a file system that has the flag). */
function canMakeImmutable(): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-chattr-'));
  const file = join(dir, 'probe');
  try {
    execFileSync('touch', [file]);
    const set = spawnSync('chattr', ['+i', file], { encoding: 'utf8' });
    if (set.status !== 0) {
      chattrReason = `chattr +i failed: ${(set.stderr || set.error?.message || '').trim()}`;
      return false;
    }
    spawnSync('chattr', ['-i', file]);
    return true;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('a SQLite file: concurrent writers, one server process, file-system faults [sqlite, server process]', () => {
  let dir: string;
  let path: string;
  let url: string;
  let server: ChildServer | undefined;
  let key: string;
  const projectId = 'acme/sqlite-file';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loupe-sqlite-file-'));
    path = join(dir, 'loupe.db');
    url = `sqlite:${path}`;
    ({ api_key: key } = await createUserViaCli(url, { entity: 'acme', role: 'member' }));
    server = await startChildServer({ databaseUrl: url });
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('read-then-write transactions wait for a writer that holds the lock briefly, instead of failing', async () => {
    const { queueId, items } = await queueWithItems(server!, key, projectId, 3);
    const calls = await createSomeCalls(server!, key, projectId, 2);

    // Progress reads the item, then writes.
    let held = holdWriteLock(path);
    const completed = await progress(server!, key, projectId, queueId, items[0]!.id, 'completed');
    await held;
    expect(completed.status, completed.text).toBe(200);
    expect(completed.body.item.annotation_state).toBe('completed');

    // Claim reads the queue, then records a lease.
    held = holdWriteLock(path);
    const claimed = await claim(server!, key, projectId, queueId);
    await held;
    expect(claimed.status, claimed.text).toBe(200);
    expect(claimed.body.item.id).toBe(items[1]!.id);

    // Add-items (the entity manager's transaction) checks the queue, then inserts.
    held = holdWriteLock(path);
    const added = await rest(server!, 'POST', `/annotation_queues/${queueId}/items`, { key, body: { project_id: projectId, call_ids: calls } });
    await held;
    expect(added.status, added.text).toBe(200);
    expect(added.body.added_count).toBe(2);

    // Deleting an item reads it, then writes.
    held = holdWriteLock(path);
    const deleted = await rest(server!, 'DELETE', `/annotation_queues/${queueId}/items/${items[2]!.id}?project_id=${projectId}`, { key });
    await held;
    expect(deleted.status, deleted.text).toBe(200);

    // What was answered is what is stored.
    expect(count(path, `select count(*) as n from annotation_item_progress where queue_id = ? and state = 'completed'`, queueId)).toBe(1);
    expect(count(path, `select count(*) as n from annotation_item_progress where queue_id = ? and state = 'in_progress'`, queueId)).toBe(1);
    expect(count(path, 'select count(*) as n from annotation_queue_items where queue_id = ? and deleted_at is null', queueId)).toBe(4);
    expect(count(path, `select count(*) as n from entities where name like 'holder-%'`)).toBe(4);
  });

  it('answers 503 with Retry-After, writing nothing, when the lock is held past the busy timeout', async () => {
    const queueId = await createQueue(server!, key, projectId);
    const [call] = await createSomeCalls(server!, key, projectId, 1);
    const held = holdWriteLock(path, 6_000); // the server's busy_timeout is 5 s
    const reply = await rest(server!, 'POST', `/annotation_queues/${queueId}/items`, { key, body: { project_id: projectId, call_ids: [call] } });
    await held;
    expect(reply.status, reply.text).toBe(503);
    expect(reply.headers.get('retry-after')).toBe('5');
    expect(reply.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', reason: expect.stringMatching(/database/i) });
    expect(await queryItems(server!, key, projectId, queueId)).toEqual([]);
  });

  it('refuses a second server process on the same file with a clear message, while the first keeps serving', async () => {
    const second = await startChildServer({ databaseUrl: url }).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(second, 'the second server started').toBeInstanceOf(Error);
    expect(second!.message).toMatch(/exited before listening \(code 1/);
    expect(second!.message).toContain(`loupe: the SQLite database ${path} is in use by another Loupe server process`);
    expect(second!.message).not.toMatch(/\n\s+at /); // one clear line, not a stack
    expect((await rest(server!, 'GET', '/me', { key })).status).toBe(200);
  });

  it('lets the admin tool work beside the running server', async () => {
    const made = await createUserViaCli(url, { entity: 'acme', role: 'viewer' });
    const me = await rest(server!, 'GET', '/me', { key: made.api_key });
    expect(me.status, me.text).toBe(200);
    expect(me.body.username).toBe(made.username);
  });

  it('is not fooled by the lock of a server that was killed: the next server starts', async () => {
    await server!.stop('SIGKILL');
    server = await startChildServer({ databaseUrl: url });
    expect((await rest(server, 'GET', '/me', { key })).status).toBe(200);
    // A clean stop releases it too.
    await server.stop('SIGTERM');
    server = await startChildServer({ databaseUrl: url });
    expect((await rest(server, 'GET', '/ready')).status).toBe(200);
  });

  // `chattr +i` on the WAL file makes the kernel refuse writes to it (EPERM, even for root): a real
  // I/O error for SQLite (SQLITE_IOERR_WRITE), as a failing disk or file system would give.
  const chattr = canMakeImmutable();
  (chattr ? it : it.skip)(`answers 503 on a disk I/O error and recovers when the file is writable again${chattr ? '' : ` — SKIPPED: ${chattrReason}`}`, async () => {
    const queueId = await createQueue(server!, key, projectId);
    const [call] = await createSomeCalls(server!, key, projectId, 1);
    const wal = `${path}-wal`;
    expect(existsSync(wal)).toBe(true);
    execFileSync('chattr', ['+i', wal]);
    let reply;
    try {
      reply = await rest(server!, 'POST', `/annotation_queues/${queueId}/items`, { key, body: { project_id: projectId, call_ids: [call] } });
    } finally {
      execFileSync('chattr', ['-i', wal]);
    }
    expect(reply.status, reply.text).toBe(503);
    expect(reply.headers.get('retry-after')).toBe('5');
    expect(reply.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(reply.text).not.toMatch(/I\/O|sqlite|wal/i);
    // The log is written in batches, at least every 100 ms.
    const logged = () => server!.logs.some((line) => line.msg === 'request failed' && JSON.stringify(line.err).includes('disk I/O error'));
    await expect.poll(logged, { timeout: 2_000, message: 'the cause is in the server log' }).toBe(true);
    // The same request succeeds once the file is writable again, and nothing of the failed one stayed.
    expect(await queryItems(server!, key, projectId, queueId)).toEqual([]);
    expect((await addItems(server!, key, projectId, queueId, [call!])).added_count).toBe(1);
  });
});

