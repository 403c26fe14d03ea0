import type { Browser, Request as BrowserRequest } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage } from '../harness/browser.ts';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { claim, progress, queueWithItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Contract 5.8 in the web app: annotator A's annotate page follows annotator B's work, made
// through the API, within 2 seconds and without a reload.

const PROJECT = 'acme/live-web';
const LIVE_MS = 2_000;

describeInBrowser('live progress in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('annotate page follows other annotators', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let bob: CreatedKeyForTest;

    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      bob = await createUser(server, { entity: 'acme', role: 'member' });
    });
    afterAll(() => server?.stop());

    it('shows "done / total" change within 2 s after another annotator completes an item, over an event stream that carries no key in its URL', async () => {
      const { queueId } = await queueWithItems(server, alice.api_key, PROJECT, 3);
      const { page, trouble, close } = await openPage(browser);
      const streams: BrowserRequest[] = [];
      page.on('request', (request) => {
        if (request.url().includes('/trpc/annotationQueues.events')) streams.push(request);
      });
      try {
        await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), alice.api_key);
        await page.goto(`${server.url}/app/p/${PROJECT}/q/${queueId}/annotate`);
        const progressLine = page.locator('p.progress');
        await expect.poll(() => progressLine.innerText(), { timeout: 15_000 }).toMatch(/0 of 3 items done/);
        await expect.poll(() => progressLine.getAttribute('data-live'), { timeout: 10_000 }).toBe('live');

        const claimed = await claim(server, bob.api_key, PROJECT, queueId);
        expect(claimed.status).toBe(200);
        const begun = Date.now();
        expect((await progress(server, bob.api_key, PROJECT, queueId, claimed.body.item.id, 'completed')).status).toBe(200);
        await progressLine.getByText('1 of 3 items done').waitFor({ timeout: LIVE_MS });
        expect(Date.now() - begun).toBeLessThan(LIVE_MS);

        // A second one, skipped: counted as done too.
        const second = await claim(server, bob.api_key, PROJECT, queueId);
        const again = Date.now();
        expect((await progress(server, bob.api_key, PROJECT, queueId, second.body.item.id, 'skipped')).status).toBe(200);
        await progressLine.getByText('2 of 3 items done').waitFor({ timeout: LIVE_MS });
        expect(Date.now() - again).toBeLessThan(LIVE_MS);

        // The stream is same-origin (the CSP's connect-src 'self' allows it) and the key is in its
        // Authorization header, not in its URL.
        expect(streams.length).toBeGreaterThan(0);
        for (const stream of streams) {
          expect(new URL(stream.url()).origin).toBe(new URL(server.url).origin);
          expect(decodeURIComponent(stream.url())).not.toContain(alice.api_key);
          expect(stream.headers().authorization).toMatch(/^Basic /);
          expect(stream.headers().accept).toBe('text/event-stream');
        }
        expect(trouble).toEqual({ cspViolations: [], consoleErrors: [], pageErrors: [] });
      } finally {
        await close();
      }
    });
  });

  describeEachBackend('annotate page across stream renewals', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let bob: CreatedKeyForTest;

    beforeAll(async () => {
      server = await startTestServer(backend, { LOUPE_EVENT_STREAM_MAX_LIFE_MS: '1000' });
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      bob = await createUser(server, { entity: 'acme', role: 'member' });
    });
    afterAll(() => server?.stop());

    it('keeps following after its stream was renewed, and catches up on what came during the reconnect', async () => {
      const { queueId } = await queueWithItems(server, alice.api_key, PROJECT, 4);
      const { page, trouble, close } = await openPage(browser);
      let streams = 0;
      page.on('request', (request) => {
        if (request.url().includes('/trpc/annotationQueues.events')) streams++;
      });
      try {
        await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), alice.api_key);
        await page.goto(`${server.url}/app/p/${PROJECT}/q/${queueId}/annotate`);
        const progressLine = page.locator('p.progress');
        await expect.poll(() => progressLine.innerText(), { timeout: 15_000 }).toMatch(/0 of 4 items done/);
        // Items completed one after the other across several renewals (a 1 s life, ~3 s to reconnect):
        // each shows, either live or by the refetch after the reconnect.
        for (let done = 1; done <= 3; done++) {
          const item = await claim(server, bob.api_key, PROJECT, queueId);
          expect((await progress(server, bob.api_key, PROJECT, queueId, item.body.item.id, 'completed')).status).toBe(200);
          await progressLine.getByText(`${done} of 4 items done`).waitFor({ timeout: 6_000 });
          await new Promise((resolve) => setTimeout(resolve, 1_500));
        }
        expect(streams).toBeGreaterThanOrEqual(2);
        expect(await progressLine.getAttribute('data-live')).not.toBe('offline');
        expect(trouble.cspViolations).toEqual([]);
        expect(trouble.pageErrors).toEqual([]);
      } finally {
        await close();
      }
    });
  });
});
