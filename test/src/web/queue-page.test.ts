import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble } from '../harness/browser.ts';
import { batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createCalls, createQueue, progress, queryItems, stats, uniqueId } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The queue page in Chromium against the real server: a queue of 60 items (more than one page of
// the list), three annotators' feedback and progress written through the API; what the page shows
// is compared with what the API answers.

const PROJECT = 'acme/queue-page';
const LIVE_MS = 2_000;
const ITEMS = 60;
const PAGE_SIZE = 50;

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

describeInBrowser('queue page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('queue page', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let bob: CreatedKeyForTest;
    let carol: CreatedKeyForTest;
    let viewer: CreatedKeyForTest;
    let queueId: string;
    let callIds: string[];
    let itemIds: string[];
    let refs: { tone: string; score: string };
    const troubles: PageTrouble[] = [];
    /** How the page names an annotator to someone else: by username (resolved through the API after the values arrive). */
    const labelOf = (userId: string) => [alice, bob, carol].find((user) => user.user_id === userId)!.username;

    /** One annotator's values for an item, written the way the annotate page writes them. */
    async function annotate(user: CreatedKeyForTest, callId: string, values: { tone?: string; score?: number; note?: string }) {
      const ref = callRefOf(PROJECT, callId);
      const about = { project_id: PROJECT, svc_ref: ref, call_ref: ref, queue_id: queueId };
      const batch = [
        ...(values.tone === undefined ? [] : [{ ...about, feedback_type: 'svc.annotation.tone', annotation_ref: refs.tone, payload: { value: values.tone } }]),
        ...(values.score === undefined ? [] : [{ ...about, feedback_type: 'svc.annotation.score', annotation_ref: refs.score, payload: { value: values.score } }]),
        ...(values.note === undefined ? [] : [{ ...about, feedback_type: 'svc.note.1', payload: { note: values.note } }]),
      ];
      const reply = await batchCreate(server, user.api_key, batch);
      expect(reply.status, reply.text).toBe(200);
    }

    async function setProgress(user: CreatedKeyForTest, index: number, state: string) {
      const reply = await progress(server, user.api_key, PROJECT, queueId, itemIds[index]!, state);
      expect(reply.status, reply.text).toBe(200);
    }

    beforeAll(async () => {
      server = await startTestServer(backend);
      [alice, bob, carol] = [await createUser(server, { entity: 'acme', role: 'member' }), await createUser(server, { entity: 'acme', role: 'member' }), await createUser(server, { entity: 'acme', role: 'member' })];
      viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
      refs = {
        tone: (await createSpec(server, alice.api_key, PROJECT, 'tone', { enum: ['friendly', 'neutral', 'rude'] })).ref,
        score: (await createSpec(server, alice.api_key, PROJECT, 'score', { type: 'integer', minimum: 1, maximum: 5 })).ref,
      };
      callIds = await createCalls(
        server,
        alice.api_key,
        PROJECT,
        Array.from({ length: ITEMS }, (_, index) => ({ id: uniqueId('call'), op_name: `chat-${String(index).padStart(2, '0')}`,
          // Started in the reverse of the order they are added in.
          started_at: new Date(Date.UTC(2026, 0, 2, 3, 4, ITEMS - index)).toISOString(),
          inputs: { question: `Question ${index}?` }, output: `Answer ${index}.` })),
      );
      queueId = await createQueue(server, alice.api_key, PROJECT, { description: 'Tone and score of support answers.', scorer_refs: [refs.tone, refs.score], annotations_per_item: 3, lease_seconds: 600 });
      const added = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, { key: alice.api_key, body: { project_id: PROJECT, call_ids: callIds, display_fields: ['inputs.question'] } });
      expect(added.body.added_count, added.text).toBe(ITEMS);
      itemIds = (await queryItems(server, alice.api_key, PROJECT, queueId, { limit: ITEMS })).map((item) => item.id);

      // Item 0: three annotators (alice's first score replaced by a later one); item 3: alice alone.
      await annotate(alice, callIds[0]!, { tone: 'friendly', score: 2 });
      await annotate(alice, callIds[0]!, { score: 4 });
      await annotate(bob, callIds[0]!, { tone: 'neutral', score: 3 });
      await annotate(carol, callIds[0]!, { tone: 'friendly', score: 5, note: 'Polite and right.' });
      await annotate(alice, callIds[3]!, { tone: 'rude', score: 1 });
      for (const user of [alice, bob, carol]) await setProgress(user, 0, 'completed');
      await setProgress(alice, 1, 'skipped');
      await setProgress(bob, 2, 'in_progress');
      await setProgress(alice, 3, 'completed');
    });
    afterAll(() => server?.stop());

    async function openQueuePage(user: CreatedKeyForTest): Promise<{ page: Page; close: () => Promise<void>; requests: string[] }> {
      const opened = await openPage(browser);
      troubles.push(opened.trouble);
      const requests: string[] = [];
      opened.page.on('request', (request) => requests.push(request.url()));
      await opened.page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), user.api_key);
      await opened.page.goto(`${server.url}/app/p/${PROJECT}/q/${queueId}`);
      await opened.page.locator('p.progress').waitFor();
      return { ...opened, requests };
    }

    const rows = (page: Page) => page.locator('table.items tbody tr');
    const countsByState = (page: Page) => page.getByRole('region', { name: 'Progress' }).locator('dl.totals dd').allInnerTexts();

    it('shows a viewer the rubric, the settings, the exact counts by state, and each annotator\'s values; pages the items with Load more', async () => {
      const { page, close, requests } = await openQueuePage(viewer);
      try {
        const counts = await stats(server, viewer.api_key, PROJECT, queueId);
        expect(counts.by_state).toEqual({ unstarted: ITEMS - 4, in_progress: 1, completed: 2, skipped: 1 });
        expect(counts.completed_items).toBe(3);
        // Three annotations per item: only item 0 has all three.
        expect(counts.done_items).toBe(1);
        await page.getByRole('heading', { level: 1 }).getByText(/^queue-/).waitFor();
        expect(await page.getByText('Tone and score of support answers.').count()).toBe(1);
        expect(await page.locator('p.progress').innerText()).toBe(`${counts.done_items} of ${ITEMS} items done`);
        expect(await page.getByText('2 more have some of the annotations each item needs.').count()).toBe(1);
        const byState = page.getByRole('region', { name: 'Progress' }).locator('dl.totals');
        expect(await byState.locator('dt').allInnerTexts()).toEqual(['Not started', 'In progress', 'Completed', 'Skipped']);
        expect(await countsByState(page)).toEqual([counts.by_state.unstarted, counts.by_state.in_progress, counts.by_state.completed, counts.by_state.skipped].map(String));
        // Each annotator's progress, by username.
        const byAnnotator = page.getByRole('table', { name: 'Progress by annotator' }).locator('tbody tr');
        await expect.poll(() => byAnnotator.evaluateAll((trs) => trs.map((tr) => [...tr.children].map((cell) => (cell as HTMLElement).innerText)))).toEqual(
          counts.by_annotator.map((row) => [labelOf(row.annotator_user_id), String(row.in_progress), String(row.completed), String(row.skipped)]),
        );
        const rubric = page.getByRole('region', { name: 'Rubric' });
        expect(await rubric.innerText()).toMatch(/tone\s+one of friendly, neutral, rude[\s\S]*score\s+scale 1–5/);
        const settings = await page.getByRole('region', { name: 'Settings' }).innerText();
        expect(settings).toMatch(/Annotations per item\s+3/);
        expect(settings).toMatch(/Lease\s+10 minutes/);

        // A viewer reads: the agreement link, no annotating.
        expect(await page.getByRole('link', { name: 'Agreement' }).getAttribute('href')).toBe(`/app/p/${PROJECT}/q/${queueId}/agreement`);
        expect(await page.getByRole('link', { name: 'Start annotating' }).count()).toBe(0);

        // The first page, then the rest with Load more (keyboard).
        await expect.poll(() => rows(page).count()).toBe(PAGE_SIZE);
        expect(await page.getByText(`Showing ${PAGE_SIZE} of ${ITEMS} items`).count()).toBe(1);
        await page.getByRole('button', { name: 'Load more' }).focus();
        await page.keyboard.press('Enter');
        await expect.poll(() => rows(page).count()).toBe(ITEMS);
        // Focus moved to the first item of the new page.
        await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(`Open chat-${PAGE_SIZE} ${callIds[PAGE_SIZE]}`);
        expect(await page.getByText(`Showing ${ITEMS} of ${ITEMS} items`).count()).toBe(1);
        expect(await page.getByRole('button', { name: 'Load more' }).count()).toBe(0);
        expect(await rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-call-id')))).toEqual(callIds);

        // States and each annotator's latest value per spec, in the row of its item.
        const row = (index: number) => page.locator(`table.items tbody tr[data-call-id="${callIds[index]}"]`);
        expect(await row(0).locator('.state').innerText()).toBe('Completed');
        expect(await row(1).locator('.state').innerText()).toBe('Skipped');
        expect(await row(2).locator('.state').innerText()).toBe('In progress');
        expect(await row(4).locator('.state').innerText()).toBe('Not started');
        const annotators = [alice, bob, carol].sort((a, b) => byId(a.user_id, b.user_id));
        const toneOf = new Map([[alice.user_id, 'friendly'], [bob.user_id, 'neutral'], [carol.user_id, 'friendly']]);
        const scoreOf = new Map([[alice.user_id, '4'], [bob.user_id, '3'], [carol.user_id, '5']]);
        await expect.poll(() => row(0).locator('td[data-spec="tone"] li').allInnerTexts()).toEqual(annotators.map((user) => `${labelOf(user.user_id)}: ${toneOf.get(user.user_id)}`));
        expect(await row(0).locator('td[data-spec="score"] li').allInnerTexts()).toEqual(annotators.map((user) => `${labelOf(user.user_id)}: ${scoreOf.get(user.user_id)}`));
        expect(await row(3).locator('td[data-spec="score"] li').allInnerTexts()).toEqual([`${labelOf(alice.user_id)}: 1`]);
        expect(await row(4).locator('td[data-spec="tone"]').innerText()).toBe('none');
        await screenshot(page, `${backend}-queue`);
        expect(await seriousViolations(page)).toEqual([]);

        // Opening an item: its call and every annotator's values side by side.
        await row(0).getByRole('button', { name: `Open chat-00 ${callIds[0]}` }).focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog');
        await dialog.getByRole('heading', { level: 2, name: 'chat-00', exact: true }).waitFor();
        const table = dialog.getByRole('table', { name: 'Values by annotator' });
        await table.waitFor();
        const cells = () => table.locator('tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((cell) => (cell as HTMLElement).innerText)));
        await expect.poll(cells).toEqual([
          ['Spec', ...annotators.map((user) => labelOf(user.user_id))],
          ['tone', ...annotators.map((user) => toneOf.get(user.user_id))],
          ['score', ...annotators.map((user) => scoreOf.get(user.user_id))],
          ['Note', ...annotators.map((user) => (user === carol ? 'Polite and right.' : 'none'))],
        ]);
        expect(await dialog.getByRole('region', { name: 'Output' }).innerText()).toContain('Answer 0.');
        expect(await dialog.getByRole('region', { name: 'Display fields' }).innerText()).toContain('Question 0?');
        await screenshot(page, `${backend}-queue-item`);
        expect(await seriousViolations(page)).toEqual([]);
        // Every name on the page (progress, items, the opened item) came in one request.
        expect(requests.filter((url) => url.includes('projects.users'))).toHaveLength(1);
        await page.keyboard.press('Escape');
        await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
        // Focus went back to the button that opened it.
        expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(`Open chat-00 ${callIds[0]}`);

        // The state filter narrows the list, by the API's own filter.
        await page.getByLabel('State', { exact: true }).selectOption({ label: 'Skipped' });
        await expect.poll(() => rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-call-id')))).toEqual([callIds[1]]);
        expect(await page.getByText('Showing 1 of 1 items').count()).toBe(1);
        await page.getByLabel('Order', { exact: true }).selectOption({ label: 'Call started' });
        await page.getByLabel('State', { exact: true }).selectOption({ label: 'All states' });
        await expect.poll(() => rows(page).first().getAttribute('data-call-id')).toBe(callIds[ITEMS - 1]);
      } finally {
        await close();
      }
    });

    it('offers a member "Start annotating" and names the member "you"', async () => {
      const { page, close } = await openQueuePage(alice);
      try {
        expect(await page.getByRole('link', { name: 'Start annotating' }).getAttribute('href')).toBe(`/app/p/${PROJECT}/q/${queueId}/annotate`);
        const row = page.locator(`table.items tbody tr[data-call-id="${callIds[3]}"]`);
        await expect.poll(() => row.locator('td[data-spec="tone"] li').allInnerTexts()).toEqual(['you: rude']);
        // The others by username.
        const first = page.locator(`table.items tbody tr[data-call-id="${callIds[0]}"]`);
        const others = [bob, carol].sort((a, b) => byId(a.user_id, b.user_id)).map((user) => user.username);
        await expect.poll(async () => (await first.locator('td[data-spec="tone"] li .annotator').allInnerTexts()).filter((name) => name !== 'you').sort()).toEqual(others.sort());
        expect(await first.locator('td[data-spec="tone"] li .annotator').allInnerTexts()).toContain('you');
        await page.getByRole('link', { name: 'Start annotating' }).click();
        await page.getByRole('button', { name: 'Start annotating' }).waitFor();
        expect(new URL(page.url()).pathname).toBe(`/app/p/${PROJECT}/q/${queueId}/annotate`);
      } finally {
        await close();
      }
    });

    it('shows progress written by another annotator through the API within 2 s, without a reload', async () => {
      const { page, close } = await openQueuePage(viewer);
      try {
        const before = await stats(server, viewer.api_key, PROJECT, queueId);
        await expect.poll(() => page.locator('p.progress').innerText()).toBe(`${before.done_items} of ${ITEMS} items done`);
        await expect.poll(() => page.locator('.queue-progress .live').getAttribute('data-live'), { timeout: 10_000 }).toBe('live');
        // An item no one had started, completed by carol: one of its three annotations, not done yet.
        const callId = callIds[10]!;
        const partly = (n: number) => page.getByText(`${n} more ${n === 1 ? 'has' : 'have'} some of the annotations each item needs.`);
        await setProgress(carol, 10, 'completed');
        await partly(before.completed_items - before.done_items + 1).waitFor({ timeout: LIVE_MS });
        expect(await page.locator('p.progress').innerText()).toBe(`${before.done_items} of ${ITEMS} items done`);
        // Its second and third annotators make it done.
        await setProgress(alice, 10, 'completed');
        await setProgress(bob, 10, 'completed');
        await page.locator('p.progress').getByText(`${before.done_items + 1} of ${ITEMS} items done`).waitFor({ timeout: LIVE_MS });
        const after = await stats(server, viewer.api_key, PROJECT, queueId);
        await expect.poll(() => countsByState(page), { timeout: LIVE_MS }).toEqual([after.by_state.unstarted, after.by_state.in_progress, after.by_state.completed, after.by_state.skipped].map(String));
        // The items list follows on the same event; it reads two queries (items, then their
        // feedback), so on a loaded machine it may come a little after the counts.
        await expect.poll(() => page.locator(`table.items tbody tr[data-call-id="${callId}"] .state`).innerText(), { timeout: 10_000 }).toBe('Completed');
      } finally {
        await close();
      }
    });

    it('shows a change whose event lands while the items list is still on its first read', async () => {
      const opened = await openPage(browser);
      troubles.push(opened.trouble);
      const { page } = opened;
      // The list's first items read is answered by the server at once but handed to the page only
      // after carol's completion is on the counts: what it carries predates the change.
      let answered!: () => void;
      const firstReadAnswered = new Promise<void>((resolve) => (answered = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let held = 0;
      await page.route((url) => url.pathname.includes('annotationQueues.items.query'), async (route) => {
        if (held++ > 0) return route.continue();
        const response = await route.fetch();
        answered();
        await released;
        await route.fulfill({ response });
      });
      try {
        await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), viewer.api_key);
        await page.goto(`${server.url}/app/p/${PROJECT}/q/${queueId}`);
        const before = await stats(server, viewer.api_key, PROJECT, queueId);
        await expect.poll(() => page.locator('p.progress').innerText(), { timeout: 15_000 }).toBe(`${before.done_items} of ${ITEMS} items done`);
        await expect.poll(() => page.locator('.queue-progress .live').getAttribute('data-live'), { timeout: 10_000 }).toBe('live');
        await firstReadAnswered;
        await setProgress(carol, 11, 'completed');
        // The counts follow at once: one more item has some of its annotations.
        const partly = before.completed_items - before.done_items + 1;
        await page.getByText(`${partly} more have some of the annotations each item needs.`).waitFor({ timeout: LIVE_MS });
        release();
        await expect.poll(() => page.locator(`table.items tbody tr[data-call-id="${callIds[11]}"] .state`).innerText(), { timeout: LIVE_MS }).toBe('Completed');
        expect(held).toBeGreaterThan(1);
      } finally {
        release();
        await opened.close();
      }
    });

    it('saw no CSP violation, console error or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});
