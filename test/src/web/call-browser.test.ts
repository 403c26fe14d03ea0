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
// matching" adding every matching call, more than one page of them, checked through the API; and
// the filters by model, exception, start time (typed in the browser's time zone) and root calls.

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

    async function open(view: PageView = {}, project = projectId): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      await opened.page.addInitScript((apiKey: string) => sessionStorage.setItem('loupe.apiKey', apiKey), alice.api_key);
      await opened.page.goto(`${server.url}/app/p/${project}`);
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
        // The first page can take longer than a poll's second on a busy machine.
        await count.waitFor();
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
        // The second page of matching calls is held until the progress of the first is shown. It
        // may go in one batch with other queries (the queue's refresh after the first add), whose
        // path then names calls.query after them.
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        await page.route(/\/trpc\/[^?]*calls\.query/, async (route) => {
          if (`${route.request().url()} ${route.request().postData() ?? ''}`.includes('cursor')) await held;
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

    it('filters by model, exception, start time in the browser\'s time zone and root calls only, with the keyboard', async () => {
      const project = 'acme/traces';
      const model = (name: string) => ({ gen_ai: { request: { model: name } } });
      // Two traces and a lone call, a day apart, 10:00 UTC: 05:00 in New York (EST).
      await createCalls(server, alice.api_key, project, [
        { id: 't1-root', trace_id: 't1', op_name: 'agent.run', started_at: '2026-03-01T10:00:00.000Z', attributes: model('gpt-5') },
        { id: 't1-plan', trace_id: 't1', parent_id: 't1-root', op_name: 'llm.plan', started_at: '2026-03-01T10:00:01.000Z', attributes: model('gpt-5-mini') },
        { id: 't1-tool', trace_id: 't1', parent_id: 't1-root', op_name: 'tool.lookup', started_at: '2026-03-01T10:00:02.000Z', exception: 'TimeoutError' },
        { id: 't2-root', trace_id: 't2', op_name: 'agent.run', started_at: '2026-03-02T10:00:00.000Z', exception: 'Failed' },
        { id: 't2-answer', trace_id: 't2', parent_id: 't2-root', op_name: 'llm.answer', started_at: '2026-03-02T10:00:01.000Z', attributes: { ...model('gpt-5'), llm: { model_name: 'other' } } },
        { id: 't3-root', trace_id: 't3', op_name: 'agent.run', started_at: '2026-03-03T10:00:00.000Z', attributes: { gen_ai: { response: { model: 'gpt-5' } } } },
      ]);
      const { page, close } = await open({ timezoneId: 'America/New_York' }, project);
      try {
        const shownIds = async () => {
          await page.getByText(/^\d+ calls? shown|^No call matches/).first().waitFor();
          const table = page.getByRole('table', { name: /Calls/ });
          return (await table.count()) ? (await table.locator('tbody tr td:nth-child(7) code').allInnerTexts()).sort() : [];
        };
        const submit = () => page.getByLabel('Op name').press('Enter');
        await expect.poll(shownIds, { timeout: 15_000 }).toEqual(['t1-plan', 't1-root', 't1-tool', 't2-answer', 't2-root', 't3-root']);
        // The model column: the request model, else the response model; the exception marked in words.
        const row = (id: string) => page.getByRole('row').filter({ has: page.getByText(id, { exact: true }) });
        expect(await row('t3-root').locator('td').nth(2).innerText()).toBe('gpt-5');
        expect(await row('t1-tool').locator('td').nth(1).innerText()).toMatch(/tool\.lookup\s*⚠ exception/);
        expect(await page.getByText('Times are in your time zone, America/New_York.').count()).toBe(1);

        // Model: exactly gen_ai.request.model (t3's response model does not count); suggested from the calls shown.
        expect(await page.locator('datalist option').evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value))).toEqual(['gpt-5', 'gpt-5-mini']);
        await page.getByLabel('Model').fill('gpt-5');
        await submit();
        await expect.poll(shownIds, { timeout: 15_000 }).toEqual(['t1-root', 't2-answer']);
        // And without an exception, root calls only.
        await page.getByLabel('Model').fill('');
        await page.getByLabel('Exception').selectOption({ label: 'With an exception' });
        await submit();
        await expect.poll(shownIds, { timeout: 15_000 }).toEqual(['t1-tool', 't2-root']);
        await page.getByLabel('Root calls only').focus();
        await page.keyboard.press('Space');
        await submit();
        await expect.poll(shownIds, { timeout: 15_000 }).toEqual(['t2-root']);
        await page.getByLabel('Exception').selectOption({ label: 'Without an exception' });
        await submit();
        await expect.poll(shownIds, { timeout: 15_000 }).toEqual(['t1-root', 't3-root']);
        await page.getByLabel('Exception').selectOption({ label: 'Any call' });
        await page.getByLabel('Root calls only').uncheck();

        // 05:00:00 to 05:00:01 on March 2nd in New York is 10:00:00 to 10:00:01 UTC: t2's root alone.
        await page.getByLabel('Started from').fill('2026-03-02T05:00:00');
        await page.getByLabel('Started before').fill('2026-03-02T05:00:01');
        await submit();
        await expect.poll(shownIds, { timeout: 15_000 }).toEqual(['t2-root']);
        await screenshot(page, `${backend}-call-filters`);
        expect(await seriousViolations(page)).toEqual([]);

        // A range that ends where it starts: refused at its field, which takes the focus; nothing else changes.
        await page.getByLabel('Started before').fill('2026-03-02T05:00:00');
        await submit();
        const before = page.getByLabel('Started before');
        await page.getByText('This is not after the start of the range.').waitFor();
        expect(await before.getAttribute('aria-invalid')).toBe('true');
        expect(await before.evaluate((element) => element === document.activeElement)).toBe(true);
        expect(await shownIds()).toEqual(['t2-root']);
        expect(await seriousViolations(page)).toEqual([]);

        // Show all calls empties every field.
        await page.getByRole('button', { name: 'Show all calls' }).click();
        await expect.poll(shownIds, { timeout: 15_000 }).toHaveLength(6);
        expect(await page.getByLabel('Started from').inputValue()).toBe('');
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
