/// <reference lib="dom" />
// Code passed to page.evaluate and addInitScript runs in the page: the DOM's types check it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@loupe/client';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../harness/browser.ts';
import { createAnnotatingQueue } from '../harness/annotating-fixture.ts';
import { createUserViaCli } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, type Backend } from '../harness/databases.ts';
import buildWebApp from '../harness/web-build.ts';
import { startLoupe } from './child.ts';
import type { Section, Settings } from './report.ts';

// The web app in headless Chromium against the real server (its own process, production mode):
//
// - Submit and next: an annotator works through ITEMS items of a support-chat queue with the
//   keyboard only (three digits for the rubric, then Ctrl+Enter), pausing THINK_MS before each
//   item as a person would (the page reads ahead meanwhile). Measured in the page, from the
//   Ctrl+Enter keydown's timestamp to the frame that shows the next item fully: its call on screen
//   (the page's `data-call-shown` names it), the rubric emptied, Submit and next enabled again; the
//   frame counts once it has been painted (an animation frame, then the task after it). Measuring
//   in the page leaves out the round trips of the browser's debugging protocol.
// - First load: the JavaScript that a first visit of /app/ (a cold cache) transfers, as the
//   encoded (compressed) response body bytes Chromium received, signed out and signed in; the
//   annotate page's first load (with its lazily loaded Markdown renderer) is reported beside it.
//
// Targets: submit → next item p95 ≤ 100 ms on SQLite; first-load JavaScript ≤ 250 kB compressed.

const ITEMS = Number(process.env.BENCH_WEB_ITEMS ?? 100);
const THINK_MS = Number(process.env.BENCH_WEB_THINK_MS ?? 300);
/** More items than are annotated, so that every submit has a next item to show. */
const QUEUE_ITEMS = ITEMS + 20;
const TARGET_P95_MS = 100;
const TARGET_FIRST_LOAD_BYTES = 250_000;
const PROJECT = 'bench/web';
/** What Submit and next sends, in turn. */
const WRITES = ['feedback.batchCreate', 'annotationQueues.items.progress', 'annotationQueues.items.claim'];

/** One submit: its time, and each request it made (times from the key press, ms). */
type Transition = { ms: number; requests: { path: string; start: number; end: number }[] };
type Bench = { from: string | null; pressedAt: number; results: Transition[] };
type BenchWindow = Window & { loupeBench: Bench };

/** Watches for Ctrl+Enter and records when the next item is fully shown (see the header). */
function installProbe(): void {
  const bench: Bench = { from: null, pressedAt: 0, results: [] };
  (window as unknown as BenchWindow).loupeBench = bench;
  const shownCall = () => document.querySelector('[data-call-shown]')?.getAttribute('data-call-shown') ?? null;
  const ready = () => {
    const shown = shownCall();
    const submit = document.querySelector<HTMLButtonElement>('button[aria-keyshortcuts^="Control+Enter"]');
    const emptied = document.querySelectorAll('[data-rubric-field] input:checked').length === 0;
    return shown !== null && shown !== bench.from && submit !== null && !submit.disabled && emptied;
  };
  document.addEventListener(
    'keydown',
    (event) => {
      if (event.key !== 'Enter' || !(event.ctrlKey || event.metaKey)) return;
      bench.from = shownCall();
      bench.pressedAt = event.timeStamp;
      const pressedAt = event.timeStamp;
      const observer = new MutationObserver(() => {
        if (!ready()) return;
        observer.disconnect();
        requestAnimationFrame(() => {
          const channel = new MessageChannel();
          channel.port1.onmessage = () => {
            const ms = performance.now() - pressedAt;
            const requests = (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
              .filter((entry) => entry.startTime >= pressedAt && entry.name.includes('/trpc/'))
              .map((entry) => ({ path: new URL(entry.name).pathname.slice('/trpc/'.length), start: entry.startTime - pressedAt, end: entry.responseEnd - pressedAt }));
            bench.results.push({ ms, requests });
          };
          channel.port2.postMessage(null);
        });
      });
      observer.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    },
    true,
  );
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const round1 = (ms: number) => Math.round(ms * 10) / 10;

type Script = { url: string; encoding: string; vary: string; cache_control: string; transferred: number; decoded: number };
type FirstLoad = { page: string; document_cache_control: string; scripts: Script[]; transferred: number; decoded: number };

/** The JavaScript one first visit transfers, in a fresh context (a cold cache). */
async function firstLoad(browser: Browser, url: string, what: string, apiKey: string | null, shown: (page: Page) => Promise<unknown>): Promise<FirstLoad> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    if (apiKey) await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), apiKey);
    const responses: Promise<FirstLoad['scripts'][number]>[] = [];
    page.on('response', (response) => {
      if (response.request().resourceType() !== 'script') return;
      responses.push(
        (async () => {
          const [sizes, body] = await Promise.all([response.request().sizes(), response.body()]);
          const headers = response.headers();
          return {
            url: new URL(response.url()).pathname,
            encoding: headers['content-encoding'] ?? 'identity',
            vary: headers.vary ?? '',
            cache_control: headers['cache-control'] ?? '',
            transferred: sizes.responseBodySize,
            decoded: body.length,
          };
        })(),
      );
    });
    const answer = await page.goto(url);
    await shown(page);
    // Lazily loaded chunks are asked for as the page renders: give them time to arrive.
    await sleep(1000);
    const scripts = await Promise.all(responses);
    return { page: what, document_cache_control: answer?.headers()['cache-control'] ?? '', scripts, transferred: scripts.reduce((sum, s) => sum + s.transferred, 0), decoded: scripts.reduce((sum, s) => sum + s.decoded, 0) };
  } finally {
    await context.close();
  }
}

type Row = {
  database: Backend;
  submits: number;
  p50_ms: number;
  p95_ms: number;
  max_ms: number;
  mean_ms: number;
  /** Key press → the claim's answer received (the three writes in turn), p50 / p95. */
  writes_p50_ms: number;
  writes_p95_ms: number;
  /**
   * Of the writes' time, what the page spent before sending each write (from the key press, then
   * from the previous write's answer), p50 / p95 ms.
   */
  page_gaps_ms: string;
  /** The claim's answer → the next item painted, p50 / p95. */
  render_p50_ms: number;
  render_p95_ms: number;
  /** How often a submit waited for its next item's call (it was not read ahead). */
  call_reads: number;
  requests_per_submit: Record<string, number>;
  /** The server's own time (its request log) for each write of a submit, p50 / p95 ms. */
  server_ms: Record<string, string>;
  /** The same writes' round trips as the page saw them (its resource timing), p50 / p95 ms. */
  page_ms: Record<string, string>;
};

/** p50 / p95 of the server's logged request durations for the given tRPC paths. */
function serverTimes(logFile: string, paths: string[]): Record<string, string> {
  const durations = new Map<string, number[]>(paths.map((path) => [path, []]));
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"msg":"request"')) continue;
    const entry = JSON.parse(line) as { url: string; duration_ms: number };
    const path = /^\/trpc\/([^?]+)/.exec(entry.url)?.[1];
    if (path) durations.get(path)?.push(entry.duration_ms);
  }
  return Object.fromEntries([...durations].map(([path, ms]) => [path, ms.length ? `${round1(percentile(ms, 50))} / ${round1(percentile(ms, 95))}` : 'none']));
}

async function annotate(browser: Browser, backend: Backend, workDir: string, loads: FirstLoad[] | null): Promise<Row> {
  const database = await freshDatabase(backend);
  const logFile = join(workDir, `loupe-web-${backend}.log`);
  const loupe = await startLoupe(database.url, logFile).catch(async (error) => {
    await database.drop();
    throw error;
  });
  try {
    const user = await createUserViaCli(database.url, { entity: 'bench', role: 'member', username: 'web-bench' });
    const client = createClient({ url: loupe.url, apiKey: user.api_key, batch: false });
    const { queueId } = await createAnnotatingQueue(client, PROJECT, QUEUE_ITEMS, { name: 'Support answers', description: 'Rate the assistant’s last answer.' });
    const annotateUrl = `${loupe.url}/app/p/${PROJECT}/q/${queueId}/annotate`;

    if (loads) {
      loads.push(await firstLoad(browser, `${loupe.url}/app/`, '/app/ signed out', null, (page) => page.getByRole('heading', { name: 'Sign in' }).waitFor()));
      loads.push(await firstLoad(browser, `${loupe.url}/app/`, '/app/ signed in', user.api_key, (page) => page.locator('main table tbody tr').first().waitFor()));
      loads.push(
        await firstLoad(browser, annotateUrl, 'annotate page, an item shown', user.api_key, async (page) => {
          await page.getByRole('button', { name: 'Start annotating' }).click();
          await page.locator('[data-call-shown] .markdown strong').first().waitFor();
        }),
      );
    }

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), user.api_key);
      await page.addInitScript(installProbe);
      await page.goto(annotateUrl);
      await page.getByRole('button', { name: 'Start annotating' }).waitFor();
      await page.keyboard.press('Enter');
      await page.locator('[data-call-shown]').waitFor();
      // BENCH_WEB_PROFILE=<file.cpuprofile>: the page's CPU profile over the submits (SQLite), for DevTools.
      const profileTo = backend === 'sqlite' ? process.env.BENCH_WEB_PROFILE : undefined;
      const cdp = profileTo ? await context.newCDPSession(page) : undefined;
      if (cdp) {
        await cdp.send('Profiler.enable');
        await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
        await cdp.send('Profiler.start');
      }
      for (let n = 0; n < ITEMS; n++) {
        await sleep(THINK_MS);
        for (const key of [String(1 + (n % 5)), n % 4 ? '1' : '2', String(1 + (n % 3))]) await page.keyboard.press(key);
        await page.keyboard.press('Control+Enter');
        await page.waitForFunction((count) => (window as unknown as BenchWindow).loupeBench.results.length >= count, n + 1, { timeout: 30_000 });
        // The resource timing buffer holds 250 entries by default.
        await page.evaluate(() => performance.clearResourceTimings());
      }
      if (cdp && profileTo) writeFileSync(profileTo, JSON.stringify((await cdp.send('Profiler.stop')).profile));
      const results = await page.evaluate(() => (window as unknown as BenchWindow).loupeBench.results);
      const times = results.map((r) => r.ms);
      const requests: Record<string, number> = {};
      for (const r of results) for (const { path } of r.requests) requests[path] = (requests[path] ?? 0) + 1;
      const writes = results.map((r) => r.requests.find((request) => request.path.startsWith('annotationQueues.items.claim'))?.end ?? r.ms);
      const render = results.map((r, index) => r.ms - writes[index]!);
      // The page's own time before each write: from the key press, then from the previous answer.
      const gaps = WRITES.map((path, index) =>
        results.flatMap((r) => {
          const request = r.requests.find((one) => one.path === path);
          const previous = index ? r.requests.find((one) => one.path === WRITES[index - 1]) : { end: 0 };
          return request && previous ? [request.start - previous.end] : [];
        }),
      );
      return {
        database: backend,
        submits: results.length,
        p50_ms: round1(percentile(times, 50)),
        p95_ms: round1(percentile(times, 95)),
        max_ms: round1(Math.max(...times)),
        mean_ms: round1(times.reduce((a, b) => a + b, 0) / times.length),
        writes_p50_ms: round1(percentile(writes, 50)),
        writes_p95_ms: round1(percentile(writes, 95)),
        page_gaps_ms: gaps.map((gap) => `${round1(percentile(gap, 50))}/${round1(percentile(gap, 95))}`).join(' '),
        render_p50_ms: round1(percentile(render, 50)),
        render_p95_ms: round1(percentile(render, 95)),
        call_reads: results.filter((r) => r.requests.some(({ path }) => path.startsWith('calls.read'))).length,
        server_ms: serverTimes(logFile, WRITES),
        page_ms: Object.fromEntries(
          WRITES.map((path) => {
            const trips = results.flatMap((r) => r.requests.filter((request) => request.path === path).map((request) => request.end - request.start));
            return [path, trips.length ? `${round1(percentile(trips, 50))} / ${round1(percentile(trips, 95))}` : 'none'];
          }),
        ),
        requests_per_submit: Object.fromEntries(Object.entries(requests).map(([path, count]) => [path, +(count / results.length).toFixed(2)])),
      };
    } finally {
      await context.close();
    }
  } finally {
    await loupe.stop();
    await database.drop();
  }
}

export async function webBenchmark(_settings: Settings, workDir: string): Promise<Section> {
  buildWebApp();
  const backends: Backend[] = ['sqlite'];
  const notes: string[] = [];
  if (postgresAvailable) backends.push('postgresql');
  else notes.push('PostgreSQL half skipped: TEST_DATABASE_URL is unset');
  const browser = await launchChromium();
  const loads: FirstLoad[] = [];
  const rows: Row[] = [];
  const problems: string[] = [];
  try {
    for (const backend of backends) {
      rows.push(await annotate(browser, backend, workDir, backend === 'sqlite' ? loads : null));
      if (rows.at(-1)!.submits !== ITEMS) problems.push(`${backend}: ${rows.at(-1)!.submits} of ${ITEMS} submits measured`);
    }
  } finally {
    await browser.close();
  }

  console.log(`\nweb: submit and next → next item fully shown, ${ITEMS} items, ${THINK_MS} ms between items`);
  console.table(rows.map(({ requests_per_submit: _, server_ms: __, page_ms: ___, ...row }) => row));
  for (const row of rows) {
    console.log(`web: ${row.database} requests per submit: ${Object.entries(row.requests_per_submit).map(([p, c]) => `${p} ×${c}`).join(', ')}`);
    console.log(`web: ${row.database} server time p50 / p95 ms: ${Object.entries(row.server_ms).map(([p, t]) => `${p} ${t}`).join(', ')}`);
    console.log(`web: ${row.database} round trip in the page p50 / p95 ms: ${Object.entries(row.page_ms).map(([p, t]) => `${p} ${t}`).join(', ')}`);
  }
  console.log('web: JavaScript transferred by a first load (cold cache)');
  console.table(loads.map((load) => ({ page: load.page, 'transferred bytes': load.transferred, 'decoded bytes': load.decoded, scripts: load.scripts.map((s) => `${s.url} (${s.encoding})`).join(', ') })));
  for (const note of notes) console.log(`web: ${note}`);

  const sqlite = rows.find((row) => row.database === 'sqlite')!;
  const appLoad = Math.max(...loads.filter((load) => load.page.startsWith('/app/')).map((load) => load.transferred));
  const uncompressed = loads.flatMap((load) => load.scripts).filter((s) => s.encoding === 'identity' && s.decoded > 1024);
  if (uncompressed.length) problems.push(`scripts sent uncompressed: ${uncompressed.map((s) => s.url).join(', ')}`);
  // Compressed variants must say so to caches, and hashed files are cached for good.
  const badHeaders = loads.flatMap((load) => load.scripts).filter((s) => !/accept-encoding/i.test(s.vary) || !s.cache_control.includes('immutable'));
  const cachedDocuments = loads.filter((load) => !load.document_cache_control.includes('no-cache'));
  if (cachedDocuments.length) problems.push(`index.html may be cached without revalidation: ${cachedDocuments.map((load) => `${load.page} (${load.document_cache_control})`).join(', ')}`);
  if (badHeaders.length) problems.push(`scripts without Vary: Accept-Encoding or an immutable Cache-Control: ${badHeaders.map((s) => `${s.url} (${s.vary}; ${s.cache_control})`).join(', ')}`);
  const checks = [
    { what: `SQLite submit → next item p95 ${sqlite.p95_ms} ms ≤ ${TARGET_P95_MS} ms`, ok: sqlite.p95_ms <= TARGET_P95_MS },
    { what: `first load of /app/ transfers ${appLoad} bytes of JavaScript ≤ ${TARGET_FIRST_LOAD_BYTES}`, ok: appLoad <= TARGET_FIRST_LOAD_BYTES },
  ];
  for (const check of checks) console.log(`${check.ok ? 'PASS' : 'FAIL'}: ${check.what}`);
  return {
    name: 'web',
    description: `web app in headless Chromium: Ctrl+Enter → next item fully shown over ${ITEMS} items; JavaScript a first load of /app/ transfers`,
    target: { metric: `submit → next p95 ≤ ${TARGET_P95_MS} ms on SQLite, first-load JS ≤ ${TARGET_FIRST_LOAD_BYTES} bytes compressed (checks)`, min: 1 },
    comparisons: [],
    details: { items: ITEMS, think_ms: THINK_MS, rows, first_load: loads, first_load_app_js_bytes: appLoad, checks, notes },
    problems,
    passed: problems.length === 0 && checks.every((check) => check.ok),
  };
}
