// scratch: cost of the webhook event insert on PostgreSQL, by variant
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { freshDatabase } from '../../harness/databases.ts';
import { startLoupe } from '../child.ts';
import { createUserViaCli } from '../../harness/child-server.ts';
const database = await freshDatabase('postgresql');
const loupe = await startLoupe(database.url, '/tmp/ev.log', { LOUPE_WEBHOOK_ALLOW_HTTP: 'true', LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true' });
const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: 'ev' });
const headers = { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${user.api_key}`).toString('base64')}` };
const hooks: string[] = [];
for (const p of ['/a', '/b']) hooks.push(((await (await fetch(`${loupe.url}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ project_id: 'bench/hooked', url: 'http://127.0.0.1:9' + p, events: ['feedback.created'] }) })).json()) as any).webhook.id);
await loupe.stop();
const client = new pg.Client({ connectionString: database.url });
await client.connect();
const u = randomUUID();
const json = JSON.stringify({ project_id: 'bench/hooked', feedback: Array.from({ length: 1000 }, (_, n) => ({ id: randomUUID(), feedback_type: 'thumbs', svc_ref: `svc:///bench/hooked/call/call-${(n * 7) % 5000}`, call_ref: null, queue_id: null, svc_user_id: u })) });
const big = Buffer.from(json);
const small = Buffer.from(json.slice(0, 2000));
const { zstdCompressSync } = await import('node:zlib');
const z = Buffer.from(zstdCompressSync(big).toString('base64'));
console.log('z bytes', z.length);
async function run(name: string, data: Buffer, deliveries: number) {
  const t = performance.now();
  const N = 300;
  for (let i = 0; i < N; i++) {
    const eid = randomUUID(); const now = new Date();
    await client.query('begin');
    const rows = hooks.slice(0, deliveries).map((_, k) => `($${6 + k * 2}, $${7 + k * 2}, $1, 'pending', 0, $5, $5, $5)`).join(', ');
    const params: unknown[] = [eid, 'bench/hooked', 'feedback.created', data, now];
    hooks.slice(0, deliveries).forEach((h) => params.push(randomUUID(), h));
    const ins = `insert into webhook_events (id, project_id, type, data, created_at) values ($1, $2, $3, $4, $5)`;
    if (deliveries) await client.query(`with event as (${ins}) insert into webhook_deliveries (id, webhook_id, event_id, state, attempts, next_attempt_at, created_at, updated_at) values ${rows}`, params);
    else await client.query(ins, params);
    await client.query('commit');
  }
  console.log(name, ((performance.now() - t) / N).toFixed(3), 'ms per tx');
}
for (let r = 0; r < 2; r++) {
  await run('big+2', big, 2); await run('small+2', small, 2); await run('z+2', z, 2);
  if (r === 0) await client.query(`alter table webhook_events alter column data set storage extended, alter column data set compression lz4`); else await client.query(`alter table webhook_events alter column data set storage external`);
  await run('big+2 lz4/ext', big, 2);
}
await client.end();
await database.drop();
