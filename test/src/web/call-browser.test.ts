import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, REPORTS, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { createCalls, createQueue, queryItems } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The call browser of the project page in Chromium against the real server: calls filtered by a
// part of their op name and by words of their inputs and output (CallFilter, contract 5.1), a line
// of each call's inputs and output, the add bar in view while the calls scroll, and "Add all
// matching" adding every matching call, more than one page of them, checked through the API.

/** More matching calls than one page of calls/query collects (MATCHING_PAGE_SIZE, 1,000). */
const MATCHING = 1_030;

describeInBrowser('call browser in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('call browser', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    const projectId = 'acme/refunds';
    const troubles: PageTrouble[] = [];
    let matching: string[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      const at = (i: number) => new Date(Date.UTC(2026, 0, 2, 0, 0, 0, i)).toISOString();
      matching = await createCalls(
        server,
        alice.api_key,
        projectId,
        Array.from({ length: MATCHING }, (_, i) => ({
          id: `refund-${String(i).padStart(4, '0')}`,
          op_name: 'Support.Chat',
          started_at: at(i),
          inputs: { messages: [{ role: 'user', content: `Can I get a REFUND for order ${i}?` }] },
          output: { answer: `Yes: order ${i} is refunded within 5 days.` },
        })),
      );
      // The same op without the word, and the word under another op: neither matches both conditions.
      await createCalls(server, alice.api_key, projectId, [
        ...Array.from({ length: 20 }, (_, i) => ({ id: `billing-${i}`, op_name: 'support.chat', started_at: at(5000 + i), inputs: { question: 'Where is my bill?' }, output: 'Attached.' })),
        ...Array.from({ length: 5 }, (_, i) => ({ id: `summary-${i}`, op_name: 'summarize', started_at: at(6000 + i), inputs: { text: 'refund requests this week' }, output: 'Many.' })),
      ]);
    });
    afterAll(() => server?.stop());

    async function open(view: PageView = {}): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      await opened.page.addInitScript((apiKey: string) => sessionStorage.setItem('loupe.apiKey', apiKey), alice.api_key);
      await opened.page.goto(`${server.url}/app/p/${projectId}`);
      return opened;
    }

    async function filter(page: Page, opName: string, words: string): Promise<void> {
      await page.getByLabel('Op name').fill(opName);
      await page.getByLabel('Words in inputs or output').fill(words);
      await page.getByLabel('Words in inputs or output').press('Enter');
    }

    it('filters by op name part and words, shows each call\'s inputs and output, and keeps the add bar in view', async () => {
      const { page, close } = await open();
      try {
        const count = page.locator('.select-bar .count');
        await expect.poll(() => count.innerText()).toBe('50 calls shown, more to load; 0 selected');
        await filter(page, 'chat', 'Refund ORDER');
        const first = page.getByRole('row').filter({ has: page.getByText('refund-0000', { exact: true }) });
        await first.waitFor();
        // A line of inputs and one of output, as text.
        expect(await first.locator('td.preview').allInnerTexts()).toEqual(['user · Can I get a REFUND for order 0?', 'Yes: order 0 is refunded within 5 days.']);
        expect(await page.getByRole('table').getByText(/billing-|summary-/).count()).toBe(0);
        await expect.poll(() => count.innerText()).toBe('50 calls shown, more to load; 0 selected');

        // Each preview is one line of text, cut to its cell: a long one makes no row taller.
        const lines = await page.locator('table.calls td.preview').evaluateAll((cells) =>
          cells.map((cell) => {
            // The text's height over the height of its first character's line.
            const text = document.createRange();
            text.selectNodeContents(cell.firstChild!);
            const first = document.createRange();
            first.setStart(cell.firstChild!, 0);
            first.setEnd(cell.firstChild!, 1);
            return Math.round(text.getBoundingClientRect().height / first.getBoundingClientRect().height);
          }),
        );
        expect(lines).toHaveLength(100);
        expect(new Set(lines)).toEqual(new Set([1]));

        // Scrolled to the middle of the calls, the add action and the count selected are still in view.
        await page.getByLabel('Select refund-0003', { exact: true }).check();
        await page.getByLabel('Select refund-0007', { exact: true }).check();
        await page.getByRole('row').filter({ has: page.getByText('refund-0025', { exact: true }) }).scrollIntoViewIfNeeded();
        const bar = page.locator('.add-bar');
        expect(await bar.locator('.selected-count').innerText()).toBe('2 selected');
        for (const control of [page.getByRole('button', { name: 'Add to queue' }), page.getByRole('button', { name: 'Add all matching' })]) {
          expect(await control.evaluate((element) => { const box = element.getBoundingClientRect(); return box.top >= 0 && box.bottom <= window.innerHeight; })).toBe(true);
        }
        // What the window shows, scrolled into the calls (the full page puts the bar at its place below them).
        await page.screenshot({ path: `${REPORTS}${backend}-call-browser-window.png` });
        await screenshot(page, `${backend}-call-browser`);
        expect(await seriousViolations(page)).toEqual([]);

        // A word no call holds: said so.
        await filter(page, '', 'zebra');
        await page.getByText('No call matches the filter.').waitFor();
        // Syntax of either database's search is plain text: refused with its reason when no word is left.
        await filter(page, '', '"*"');
        await page.getByRole('alert').getByText(/text.*word/i).waitFor();
      } finally {
        await close();
      }
    });

    it('adds every call the filter matches with "Add all matching", by keyboard, with progress and the count from the answers', async () => {
      const queueId = await createQueue(server, alice.api_key, projectId, { name: 'Refunds' });
      const { page, close } = await open();
      try {
        await filter(page, 'CHAT', 'refund');
        await page.getByRole('row').filter({ has: page.getByText('refund-0000', { exact: true }) }).waitFor();
        await page.getByLabel('Queue', { exact: true }).selectOption({ label: 'Refunds' });
        // The second page of matching calls is held until the progress of the first is shown.
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        await page.route(/\/trpc\/calls\.query/, async (route) => {
          if (route.request().url().includes('cursor')) await held;
          await route.continue();
        });
        await page.getByRole('button', { name: 'Add all matching' }).focus();
        await page.keyboard.press('Enter');
        const answer = page.locator('.add-answer');
        await answer.getByText('Adding the matching calls to Refunds: 1,000 found, 1,000 added so far…').waitFor();
        expect(await page.getByRole('button', { name: 'Stop' }).isVisible()).toBe(true);
        expect(await page.getByRole('button', { name: 'Add to queue' }).isDisabled()).toBe(true);
        release();
        await answer.getByText(`Added ${MATCHING.toLocaleString('en')} of ${MATCHING.toLocaleString('en')} matching calls to Refunds.`).waitFor({ timeout: 30_000 });
        expect(await answer.locator('dd').allInnerTexts()).toEqual([String(MATCHING), '0', '0']);
        const items = await queryItems(server, alice.api_key, projectId, queueId, { limit: 10_000 });
        expect(items.map((item) => item.call_id).sort()).toEqual([...matching].sort());

        // Again: every one a duplicate, nothing stored twice.
        await page.getByRole('button', { name: 'Add all matching' }).click();
        await answer.getByText(`Added 0 of ${MATCHING.toLocaleString('en')} matching calls to Refunds.`).waitFor({ timeout: 30_000 });
        expect(await answer.locator('dd').allInnerTexts()).toEqual(['0', String(MATCHING), '0']);
        expect(await queryItems(server, alice.api_key, projectId, queueId, { limit: 10_000 })).toHaveLength(MATCHING);
      } finally {
        await close();
      }
    });

    it('dark theme at 390 px: the filters, previews and add bar pass axe, nothing scrolls sideways, and a screenshot', async () => {
      const { page, close } = await open({ width: 390, height: 844, colorScheme: 'dark' });
      try {
        await filter(page, 'chat', 'refund');
        await page.getByRole('row').filter({ has: page.getByText('refund-0000', { exact: true }) }).waitFor();
        await page.getByLabel('Select refund-0001', { exact: true }).check();
        await page.getByRole('row').filter({ has: page.getByText('refund-0010', { exact: true }) }).scrollIntoViewIfNeeded();
        await page.screenshot({ path: `${REPORTS}${backend}-call-browser-dark-390-window.png` });
        await screenshot(page, `${backend}-call-browser-dark-390`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      } finally {
        await close();
      }
    });

    it('saw no CSP violation or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors])).toEqual([]);
      expect(troubles.flatMap((trouble) => trouble.consoleErrors).filter((text) => !/status of 400/.test(text))).toEqual([]);
    });
  });
});
