import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { allFeedback, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { createCalls, createQueue, queryItems, uniqueId, type CallInput } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The trace beside the call on the annotate page, in Chromium against the real server: the item's
// trace as a tree nested by parent_id (op name, duration, model, an exception mark), the item's call
// selected; another call of the trace shown without leaving the item, with the keyboard only; the
// rubric still answers for the item's call, checked in what was stored.

const PROJECT = 'acme/trace';
const at = (ms: number) => new Date(Date.UTC(2026, 10, 20, 10, 0, 0, ms)).toISOString();

describeInBrowser('the trace on the annotate page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('trace tree', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let helpfulness: string;
    const troubles: PageTrouble[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      helpfulness = (await createSpec(server, alice.api_key, PROJECT, 'helpfulness', { type: 'integer', minimum: 1, maximum: 5 })).ref;
    });
    afterAll(() => server?.stop());

    /** A trace's calls (ids made unique, parents renamed to match), and a queue with one item per named call. */
    async function traceQueue(calls: CallInput[], itemsOf: string[]) {
      const trace = uniqueId('trace');
      const ids = new Map(calls.map((call) => [call.id as string, uniqueId(call.id as string)]));
      const stored = calls.map((call) => ({
        ...call,
        id: ids.get(call.id as string),
        trace_id: call.trace_id ?? trace,
        ...(typeof call.parent_id === 'string' ? { parent_id: ids.get(call.parent_id) ?? call.parent_id } : {}),
      }));
      await createCalls(server, alice.api_key, PROJECT, stored);
      const queueId = await createQueue(server, alice.api_key, PROJECT, { scorer_refs: [helpfulness] });
      const added = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, { key: alice.api_key, body: { project_id: PROJECT, call_ids: itemsOf.map((id) => ids.get(id)) } });
      expect(added.status, added.text).toBe(200);
      return { queueId, ids, trace };
    }

    async function openAnnotate(queueId: string, view: PageView = {}): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      const { page } = opened;
      await page.addInitScript((key: string) => {
        sessionStorage.setItem('loupe.apiKey', key);
        (window as unknown as { pointerEvents: number }).pointerEvents = 0;
        for (const type of ['pointerdown', 'mousedown', 'mouseup', 'wheel']) {
          document.addEventListener(type, () => (window as unknown as { pointerEvents: number }).pointerEvents++, true);
        }
      }, alice.api_key);
      await page.goto(`${server.url}/app/p/${PROJECT}/q/${queueId}/annotate`);
      await page.getByRole('button', { name: 'Start annotating' }).waitFor();
      return opened;
    }

    const callHeading = (page: Page, opName: string) => page.getByRole('heading', { level: 2, name: opName, exact: true });
    const tree = (page: Page) => page.getByRole('tree', { name: 'Calls of the trace' });
    /**
     * Each row of the tree: its level, its name (a row is named by its text: what is hidden from
     * screen readers is left out) and whether it is selected. getByRole checks the names Chromium computes.
     */
    const rows = (page: Page) =>
      tree(page)
        .getByRole('treeitem')
        .evaluateAll((items) =>
          items.map((item) => {
            const copy = item.cloneNode(true) as Element;
            for (const hidden of copy.querySelectorAll('[aria-hidden="true"]')) hidden.remove();
            return `${item.getAttribute('aria-level')} ${copy.textContent}${item.getAttribute('aria-selected') === 'true' ? ' [selected]' : ''}`;
          }),
        );
    /** The text of what has the focus, without what is hidden from screen readers. */
    const focused = (page: Page) =>
      page.evaluate(() => {
        const copy = document.activeElement?.cloneNode(true) as Element | undefined;
        for (const hidden of copy?.querySelectorAll('[aria-hidden="true"]') ?? []) hidden.remove();
        return copy?.textContent ?? null;
      });
    const pointerEvents = (page: Page) => page.evaluate(() => (window as unknown as { pointerEvents: number }).pointerEvents);

    /** An agent run: a plan, a tool that failed with a nested request, the answer (the item), and a span whose parent never arrived. */
    const AGENT: CallInput[] = [
      { id: 'run', op_name: 'agent.run', started_at: at(0), ended_at: at(4500), inputs: { question: 'Did order 51920 ship?' } },
      { id: 'plan', parent_id: 'run', op_name: 'llm.plan', started_at: at(40), ended_at: at(1140), attributes: { gen_ai: { request: { model: 'gpt-5-mini' } } }, inputs: { messages: [{ role: 'user', content: 'Plan the lookup.' }] }, output: { role: 'assistant', content: 'Look up **order 51920**.' } },
      { id: 'tool', parent_id: 'run', op_name: 'tool.lookup', started_at: at(1200), ended_at: at(3700), exception: 'TimeoutError: the order service did not answer', inputs: { order: 51920 } },
      { id: 'http', parent_id: 'tool', op_name: 'http.get', started_at: at(1210), ended_at: at(3690), attributes: { http: { url: 'https://orders.example/51920' } } },
      { id: 'answer', parent_id: 'run', op_name: 'llm.answer', started_at: at(3800), ended_at: at(4400), attributes: { gen_ai: { response: { model: 'gpt-5' } } }, inputs: { question: 'Did order 51920 ship?' }, output: 'It **shipped** yesterday.' },
      { id: 'late', parent_id: 'never-arrived', op_name: 'cache.write', started_at: at(4450), ended_at: at(4460), attributes: { llm: { model_name: 'none' } } },
    ];
    const AGENT_ROWS = [
      '1 agent.run, 4.5 s',
      '2 llm.plan, 1.1 s, gpt-5-mini',
      '2 tool.lookup, 2.5 s, exception',
      '3 http.get, 2.5 s',
      "2 llm.answer, 600 ms, gpt-5, this item [selected]",
      '1 cache.write, 10 ms, none, parent not shown',
    ];

    it('shows the item\'s trace as a tree, shows another call with the keyboard, and stores the answers on the item\'s call', async () => {
      const { queueId, ids } = await traceQueue([...AGENT, { id: 'alone', trace_id: uniqueId('lone'), op_name: 'alone', started_at: at(9000) }], ['answer', 'alone']);
      const { page, close } = await openAnnotate(queueId);
      try {
        await page.keyboard.press('Enter');
        await callHeading(page, 'llm.answer').waitFor();
        await expect.poll(() => rows(page)).toEqual(AGENT_ROWS);
        expect(await page.getByRole('region', { name: 'Trace' }).getByText('6 calls').count()).toBe(1);
        // The exception is marked in words on screen, not only by colour.
        expect(await tree(page).getByRole('treeitem', { name: /^tool\.lookup/ }).innerText()).toMatch(/exception/);

        // From the call's heading, Shift+Tab reaches the tree at the item's row (the one tab stop of the tree).
        expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H2');
        await page.keyboard.press('Shift+Tab');
        expect(await focused(page)).toBe('llm.answer, 600 ms, gpt-5, this item');
        await page.keyboard.press('ArrowUp');
        await page.keyboard.press('ArrowUp');
        expect(await focused(page)).toBe('tool.lookup, 2.5 s, exception');
        await page.keyboard.press('Enter');
        await callHeading(page, 'tool.lookup').waitFor();
        const status = page.getByRole('status').filter({ hasText: 'another call of this trace' });
        expect(await status.innerText()).toMatch(new RegExp(`Showing tool\\.lookup \\(${ids.get('tool')}\\), another call of this trace\\. The rubric is about the item's call, llm\\.answer\\.`));
        expect(await page.getByRole('region', { name: 'Exception' }).innerText()).toContain('TimeoutError: the order service did not answer');
        expect((await rows(page)).filter((row) => row.endsWith('[selected]'))).toEqual(['2 tool.lookup, 2.5 s, exception [selected]']);
        expect(await focused(page)).toBe('tool.lookup, 2.5 s, exception');

        // ← closes it, ← again goes to its parent, → (open) goes to the first child, Space shows it.
        await page.keyboard.press('ArrowLeft');
        await expect.poll(() => tree(page).getByRole('treeitem').count()).toBe(5);
        expect(await tree(page).getByRole('treeitem', { name: /^tool\.lookup/ }).getAttribute('aria-expanded')).toBe('false');
        await page.keyboard.press('ArrowLeft');
        expect(await focused(page)).toBe('agent.run, 4.5 s');
        await page.keyboard.press('ArrowRight');
        expect(await focused(page)).toBe('llm.plan, 1.1 s, gpt-5-mini');
        await page.keyboard.press(' ');
        await callHeading(page, 'llm.plan').waitFor();
        await expect.poll(() => page.getByRole('article').locator('strong').allInnerTexts()).toEqual(['order 51920']);
        await page.keyboard.press('End');
        expect(await focused(page)).toBe('cache.write, 10 ms, none, parent not shown');
        await page.keyboard.press('Home');
        expect(await focused(page)).toBe('agent.run, 4.5 s');
        await screenshot(page, `${backend}-annotate-trace`);
        expect(await seriousViolations(page)).toEqual([]);

        // The page's shortcuts still work from the tree: 4 answers the rubric, n writes a note.
        await page.keyboard.press('4');
        await page.keyboard.press('n');
        await page.keyboard.type('Read the plan first');
        await page.keyboard.press('Escape');
        // Back to the item's call with the button after the tree; the focus goes to its heading.
        await page.keyboard.press('Shift+Tab');
        expect(await focused(page)).toBe("Show the item's call");
        await page.keyboard.press('Enter');
        await callHeading(page, 'llm.answer').waitFor();
        await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('llm.answer');
        expect(await status.count()).toBe(0);
        // Another call shown again, then submitted from there: the answers are the item's call's.
        await page.keyboard.press('Shift+Tab');
        await page.keyboard.press('Home');
        await page.keyboard.press('Enter');
        await callHeading(page, 'agent.run').waitFor();
        await page.keyboard.press('Control+Enter');
        await callHeading(page, 'alone').waitFor();

        // The next item's trace holds only its call: said in a line, no tree.
        await page.getByText(/The only call of its trace/).waitFor();
        expect(await tree(page).count()).toBe(0);
        expect(await pointerEvents(page)).toBe(0);

        const stored = await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId });
        const item = callRefOf(PROJECT, ids.get('answer')!);
        expect(stored.map(({ call_ref, svc_ref, feedback_type, payload }) => ({ call_ref, svc_ref, feedback_type, payload })).sort((a, b) => a.feedback_type.localeCompare(b.feedback_type))).toEqual([
          { call_ref: item, svc_ref: item, feedback_type: 'svc.annotation.helpfulness', payload: { value: 4 } },
          { call_ref: item, svc_ref: item, feedback_type: 'svc.note.1', payload: { note: 'Read the plan first' } },
        ]);
        const items = await queryItems(server, alice.api_key, PROJECT, queueId);
        expect(items.map((entry) => [entry.call_id, entry.annotation_state])).toEqual([
          [ids.get('answer'), 'completed'],
          [ids.get('alone'), 'in_progress'],
        ]);
      } finally {
        await close();
      }
    });

    it('dark theme at 390 px: the tree and another call shown pass axe, nothing scrolls sideways, and a screenshot', async () => {
      const { queueId } = await traceQueue(AGENT, ['answer']);
      const { page, close } = await openAnnotate(queueId, { width: 390, height: 844, colorScheme: 'dark' });
      try {
        await page.keyboard.press('Enter');
        await callHeading(page, 'llm.answer').waitFor();
        await expect.poll(() => rows(page)).toEqual(AGENT_ROWS);
        await page.keyboard.press('Shift+Tab');
        await page.keyboard.press('ArrowUp');
        await page.keyboard.press('ArrowUp');
        await page.keyboard.press('Enter');
        await callHeading(page, 'tool.lookup').waitFor();
        await screenshot(page, `${backend}-annotate-trace-dark-390`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      } finally {
        await close();
      }
    });

    it('a trace of more calls than are read shows the first 500 by start and the item\'s call after them, and says so', async () => {
      const calls: CallInput[] = [
        { id: 'root', op_name: 'batch.run', started_at: at(0) },
        ...Array.from({ length: 520 }, (_, i) => ({ id: `step-${i}`, parent_id: 'root', op_name: `step-${String(i).padStart(3, '0')}`, started_at: at(1 + i) })),
      ];
      // The item is the last step: past the first 500 calls by start.
      const { queueId, ids } = await traceQueue(calls, ['step-519']);
      const { page, close } = await openAnnotate(queueId);
      try {
        await page.keyboard.press('Enter');
        await callHeading(page, 'step-519').waitFor();
        await page.getByText("Shows the first 500 calls of this trace by start, and the item's call: it holds more.").waitFor();
        expect(await page.getByRole('region', { name: 'Trace' }).getByText('501 calls').count()).toBe(1);
        await expect.poll(() => tree(page).getByRole('treeitem').count()).toBe(501);
        // The root and the 499 steps after it by start, then the item's step under the root, after them.
        const shown = await rows(page);
        expect(shown.slice(0, 3)).toEqual(['1 batch.run, not ended', '2 step-000, not ended', '2 step-001, not ended']);
        expect(shown.slice(-2)).toEqual(['2 step-498, not ended', '2 step-519, not ended, this item [selected]']);
        const selected = tree(page).getByRole('treeitem', { selected: true });
        expect(await selected.evaluate((row) => [row.getAttribute('aria-posinset'), row.getAttribute('aria-setsize')])).toEqual(['500', '500']);
        // The item's row is scrolled into the tree's view.
        expect(
          await selected.evaluate((row) => {
            const box = row.closest('[role="tree"]')!.getBoundingClientRect();
            const own = row.getBoundingClientRect();
            return own.top >= box.top && own.bottom <= box.bottom;
          }),
        ).toBe(true);
        expect(ids.size).toBe(521);
        // No axe scan here: the rows are those scanned above, and axe takes minutes over 501 of them.
      } finally {
        await close();
      }
    });

    it('saw no CSP violation or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});
