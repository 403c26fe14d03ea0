// scratch: webhooks cost breakdown (server / postgres / bench CPU per batch), alternating none/hooked.
import { readFileSync, readdirSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createUserViaCli } from '../../harness/child-server.ts';
import { freshDatabase, type Backend } from '../../harness/databases.ts';
import { startLoupe } from '../child.ts';
import { cpuSeconds } from '../process-cpu.ts';

const backend = (process.env.BACKEND ?? 'postgresql') as Backend;
const BATCHES = Number(process.env.BATCHES ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const byKind = new Map<string, number>();
function pgCpu(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const c = (Number(f[11]) + Number(f[12])) / 100;
      total += c;
      let kind = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      kind = kind.startsWith('postgres: 15/main: postgres loupe') ? 'backend' : kind.replace(/postgres: 15\/main: /, '').slice(0, 30);
      byKind.set(kind, (byKind.get(kind) ?? 0) + c);
      if (kind.includes('bin/postgres')) { const r = (Number(f[13]) + Number(f[14])) / 100; total += r; byKind.set('reaped', (byKind.get('reaped') ?? 0) + r); }
    } catch {}
  }
  return total;
}
const selfCpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
let received = 0;
const server = createServer((req, res) => { req.on('data', () => {}); req.on('end', () => { received++; res.writeHead(204).end(); }); });
server.listen(0, '127.0.0.1'); await once(server, 'listening');
const rurl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const database = await freshDatabase(backend);
const loupe = await startLoupe(database.url, `/tmp/wh-${backend}.log`, { LOUPE_WEBHOOK_ALLOW_HTTP: 'true', LOUPE_WEBHOOK_ALLOW_PRIVATE: 'true' });
const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: `h-${backend}` });
const headers = { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`api:${user.api_key}`).toString('base64')}` };
for (const p of ['/a', '/b']) await fetch(`${loupe.url}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ project_id: 'bench/hooked', url: rurl + p, events: ['feedback.created'] }) });
let counter = 0;
const post = async (project: string) => {
  const body = JSON.stringify({ batch: Array.from({ length: 1000 }, () => { const n = counter++; return { project_id: project, svc_ref: `svc:///${project}/call/call-${n % 5000}`, feedback_type: 'thumbs', payload: { value: n % 5, reason: 'tone', tags: ['support', 'en'] } }; }) });
  const r = await fetch(`${loupe.url}/feedback/batch/create`, { method: 'POST', headers, body });
  const t = await r.text(); if (r.status !== 200) throw new Error(t);
};
if (!process.env.NO_LATER) { const saved = counter; await post('bench/zz-later'); counter = saved; }
const pid = loupe.server.child.pid;
const res: Record<string, number[][]> = { 'bench/plain': [], 'bench/hooked': [] };
const kinds: Record<string, Map<string, number>> = { 'bench/plain': new Map(), 'bench/hooked': new Map() };
async function measure(project: string) {
  byKind.clear(); pgCpu(); const k0 = new Map(byKind); byKind.clear();
  const s0 = cpuSeconds(pid)!, p0 = pgCpu(), b0 = selfCpu(), t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 4 }, async () => { while (next++ < BATCHES) await post(project); }));
  const wall = performance.now() - t0;
  if (project === 'bench/hooked') { while (received < 2 * hookedBatches) await new Promise((r) => setTimeout(r, 5)); }
  byKind.clear();
  const s1 = cpuSeconds(pid)!, p1 = pgCpu(), b1 = selfCpu();
  for (const [k, v] of byKind) kinds[project]!.set(k, (kinds[project]!.get(k) ?? 0) + v - (k0.get(k) ?? 0));
  return [wall / BATCHES, (s1 - s0) * 1000 / BATCHES, (p1 - p0) * 1000 / BATCHES, (b1 - b0) * 1000 / BATCHES];
}
let hookedBatches = 0;
const run = async (p: string) => { if (p === 'bench/hooked') hookedBatches += BATCHES; return measure(p); };
await run('bench/plain'); await run('bench/hooked');
const MODE = process.env.MODE;
const { execSync } = await import('node:child_process');
const psql = (q: string) => execSync(`psql -h 127.0.0.1 -U postgres -Atc "${q}"`, { encoding: 'utf8' });
if (backend === 'postgresql') psql('select pg_stat_statements_reset()');
for (let r = 0; r < ROUNDS; r++) for (const p of r % 2 ? ['bench/hooked', 'bench/plain'] : ['bench/plain', 'bench/hooked']) if (!MODE || p.endsWith(MODE)) res[p]!.push(await run(p));
const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [p, rows] of Object.entries(res)) if (rows.length) console.log(p, ['wall', 'server', 'pg', 'bench'].map((k, i) => `${k} ${med(rows.map((r) => r[i]!)).toFixed(1)}`).join('  '));
for (const [p, m] of Object.entries(kinds)) console.log(p, [...m].filter(([, v]) => v > 0.05).map(([k, v]) => `${k}=${(v * 1000 / (BATCHES * (ROUNDS + 1))).toFixed(2)}`).join(' '));
if (backend === 'postgresql') console.log(psql("select calls, round((total_exec_time/calls)::numeric,3), round((total_plan_time/calls)::numeric,3), wal_bytes/calls, shared_blks_hit/calls, left(regexp_replace(query,'\\s+',' ','g'),70) from pg_stat_statements where query not like '%pg_stat%' order by total_exec_time+total_plan_time desc limit 12"));
await loupe.stop(); server.close(); await database.drop();
