import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, REPORTS, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { batchCreate, callRefOf } from '../harness/feedback.ts';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { createCalls, createQueue, queryItems } from '../harness/queues.ts';
import { preview, queryRules, readRule, type Rule } from '../harness/rules.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// A queue's rules on its page in Chromium against the real server (contract 5.10, section 9): a
// call rule made with the keyboard while the preview count follows the filter (compared with the
// API's preview of the same filter), a rule with a backfill whose progress the page follows until
// done, a feedback rule, and enabling, disabling and deleting, each checked through the API.
// Viewers read the rules; annotators are not shown them.

const PROJECT = 'acme/rules-page';
const CALLS = 400;
/** Every fourth call is a "summarize" call: the backfill rule adds those from SINCE on. */
const CONSIDERED = CALLS - 60;
const ADDED = CONSIDERED / 4;
/** Small chunks with a pause between them, so that the backfill runs long enough to be watched. */
const BACKFILL = { LOUPE_RULE_BACKFILL_CHUNK: '40', LOUPE_RULE_BACKFILL_PAUSE_MS: '300' };
/** Fewer than the calls stored: a preview over all of them counts the newest only, and says so. */
const SCAN_LIMIT = 350;
/** The backfill's start: the calls from the 61st on, fewer than the scan limit. */
const SINCE = '2026-01-02T00:01:00.000Z';
const AFTER_SINCE = (i: number) => i >= 60;
/** A preview waits for typing to pause, then asks the server: on a loaded machine that takes more than a poll's default second. */
const LOADED = { timeout: 15_000 };

describeInBrowser('queue rules in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('queue rules', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let viewer: CreatedKeyForTest;
    let annotator: CreatedKeyForTest;
    let queueId: string;
    let callIds: string[];
    const troubles: PageTrouble[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend, { ...BACKFILL, LOUPE_RULE_PREVIEW_SCAN_LIMIT: String(SCAN_LIMIT) });
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      viewer = await createUser(server, { entity: 'acme', role: 'viewer' });
      annotator = await createUser(server, { entity: 'acme', role: 'annotator' });
      callIds = await createCalls(
        server,
        alice.api_key,
        PROJECT,
        Array.from({ length: CALLS }, (_, i) => ({
          id: `call-${String(i).padStart(3, '0')}`,
          op_name: i % 4 === 0 ? 'summarize' : 'support.chat',
          started_at: new Date(Date.UTC(2026, 0, 2) + i * 1000).toISOString(),
          attributes: { gen_ai: { request: { model: i % 2 ? 'gpt-4o' : 'small-model' } }, usage: { tokens: i } },
          inputs: { question: `Question ${i}?` },
          output: `Answer ${i}.`,
        })),
      );
      queueId = await createQueue(server, alice.api_key, PROJECT, { name: 'Reviews' });
    });
    afterAll(() => server?.stop());

    /** The queue's page as `user` sees it; `ready` is what shows once it has loaded (its progress line). */
    async function openQueuePage(user: CreatedKeyForTest, view: PageView = {}, ready = 'p.progress'): Promise<{ page: Page; close: () => Promise<void> }> {
      const opened = await openPage(browser, { timezoneId: 'UTC', ...view });
      troubles.push(opened.trouble);
      await opened.page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), user.api_key);
      await opened.page.goto(`${server.url}/app/p/${PROJECT}/q/${queueId}`);
      await opened.page.locator(ready).waitFor();
      return opened;
    }

    const card = (page: Page, name: string) => page.getByRole('article', { name, exact: true });
    const stat = (page: Page, name: string, key: string) => card(page, name).locator(`dd[data-stat="${key}"]`).innerText();
    const previewCount = (page: Page) => page.getByRole('dialog').locator('.rule-preview .preview-count').innerText();
    /** The form's preview comes to say what the API's preview of the same filter answers, the scan limit included; returns that answer. */
    async function expectPreview(page: Page, filter: Record<string, unknown>, sampleRate = 1, since?: string) {
      const answer = await preview(server, alice.api_key, PROJECT, queueId, { filter, sample_rate: sampleRate, ...(since ? { since } : {}) });
      const words = `Would add ${sampleRate < 1 ? 'about ' : ''}${answer.would_add.toLocaleString('en-US')} of ${answer.matching_calls.toLocaleString('en-US')} matching calls`;
      await expect.poll(() => previewCount(page), LOADED).toBe(words);
      const note = page.getByRole('dialog').locator('.rule-preview .scan-limit');
      if (answer.scan_limit_reached) expect(await note.innerText()).toContain(`newest ${answer.scanned_calls} calls only`);
      else expect(await note.count()).toBe(0);
      return answer;
    }
    async function openRuleForm(page: Page): Promise<void> {
      await page.getByRole('button', { name: 'New rule' }).focus();
      await page.keyboard.press('Enter');
      await page.getByRole('dialog').getByRole('heading', { name: 'New rule' }).waitFor();
    }
    /** Types into a field with the keyboard, as a person does. */
    async function type(page: Page, label: string, text: string): Promise<void> {
      const field = page.getByRole('dialog').getByLabel(label, { exact: true });
      await field.focus();
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.type(text);
    }

    it('creates a call rule with the keyboard; the preview count follows the filter and is the API\'s', async () => {
      const { page, close } = await openQueuePage(alice);
      try {
        await page.getByRole('heading', { name: 'Rules' }).waitFor();
        await page.getByText('No rules: items are added by hand.').waitFor();
        await openRuleForm(page);
        // The name field has the focus.
        await page.keyboard.type('Long chats');
        // Every stored call: more than the scan limit, said so.
        expect((await expectPreview(page, {})).scan_limit_reached).toBe(true);

        await type(page, 'Op name', 'chat');
        await expectPreview(page, { op_name_contains: 'chat' });

        // An attribute condition: more than 300 tokens.
        await page.getByRole('button', { name: 'Add attribute' }).focus();
        await page.keyboard.press('Enter');
        // The new row's path has the focus.
        await page.keyboard.type('usage.tokens');
        await page.getByRole('dialog').getByLabel('Attribute 1 test').selectOption({ label: 'is greater than' });
        await type(page, 'Attribute 1 value', '300');
        const filter = { op_name_contains: 'chat', attributes: [{ path: 'usage.tokens', op: 'gt', value: 300 }] };
        await expectPreview(page, filter);

        // Half of them: an estimate, said with "about".
        await type(page, 'Share of matching calls added (%)', '50');
        await expectPreview(page, filter, 0.5);
        await type(page, 'Most items per day', '20');
        await screenshot(page, `${backend}-rule-form`);
        expect(await seriousViolations(page)).toEqual([]);

        await page.keyboard.press('Enter');
        await card(page, 'Long chats').waitFor();
        await page.getByRole('status').getByText('Created rule Long chats.').waitFor();
        const [rule] = await queryRules(server, alice.api_key, PROJECT, queueId);
        expect(rule).toMatchObject({ name: 'Long chats', trigger: 'call', filter, sample_rate: 0.5, max_items_per_day: 20, enabled: true, backfill: null });
        expect(await card(page, 'Long chats').locator('.rule-conditions li').allInnerTexts()).toEqual(['op name contains "chat"', 'usage.tokens is greater than 300']);
        expect(await card(page, 'Long chats').locator('.rule-rate').innerText()).toBe('50% of matching calls, at most 20 a day');
      } finally {
        await close();
      }
    });

    it('creates a rule with a backfill and follows its progress until done, and its items appear', async () => {
      const { page, close } = await openQueuePage(alice);
      try {
        await openRuleForm(page);
        await page.keyboard.type('Summaries');
        await type(page, 'Op name', 'summarize');
        await page.getByRole('dialog').getByLabel('Also add calls already stored (a backfill)').focus();
        await page.keyboard.press('Space');
        await page.getByRole('dialog').getByLabel('Stored calls that started from').fill(SINCE.slice(0, 19));
        // Within the scan limit: the counts are whole.
        const answer = await expectPreview(page, { op_name_contains: 'summarize' }, 1, SINCE);
        expect(answer).toMatchObject({ matching_calls: ADDED, would_add: ADDED, scan_limit_reached: false });
        await page.getByRole('dialog').getByLabel('Op name').press('Enter');

        // Running, then the counts grow as chunks land (events and a poll), then done.
        const backfill = card(page, 'Summaries').locator('.rule-backfill');
        await backfill.waitFor();
        const seen = new Set<string>();
        await expect
          .poll(
            async () => {
              const text = await backfill.innerText();
              seen.add(text);
              return text;
            },
            { timeout: 30_000, interval: 100 },
          )
          .toMatch(/: done · /);
        const rule = (await queryRules(server, alice.api_key, PROJECT, queueId)).find((r) => r.name === 'Summaries')!;
        expect(rule.backfill).toMatchObject({ since: SINCE, state: 'done', considered: CONSIDERED, added: ADDED });
        expect(await backfill.innerText()).toBe(`Backfill from Jan 2, 2026, 12:01 AM: done · ${CONSIDERED} stored calls considered, ${ADDED} added`);
        // Some state between the first and the last was shown: the page followed the backfill.
        const between = [...seen].filter((text) => /: running · /.test(text) && !/ 0 stored calls considered/.test(text));
        expect(between.length, [...seen].join('\n')).toBeGreaterThan(0);
        await expect.poll(() => stat(page, 'Summaries', 'added'), LOADED).toBe(String(ADDED));

        // The items it added are listed (the list follows the queue's events).
        await expect.poll(() => page.getByText(`Showing 50 of ${ADDED} items`).count(), LOADED).toBe(1);
        const items = await queryItems(server, alice.api_key, PROJECT, queueId, { limit: CALLS });
        expect(items.map((item) => item.call_id).sort()).toEqual(callIds.filter((_, i) => AFTER_SINCE(i) && i % 4 === 0));
        await screenshot(page, `${backend}-rules`);
        await page.locator('.rule-section').screenshot({ path: `${REPORTS}${backend}-rules-section.png` });
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await close();
      }
    });

    it('creates a feedback rule (at 390 px, dark); a thumbs-down then adds its call, shown live', async () => {
      const { page, close } = await openQueuePage(alice, { colorScheme: 'dark', width: 390 });
      try {
        await openRuleForm(page);
        await page.keyboard.type('Thumbs down');
        // The second choice of the radio group, with the arrow key.
        await page.getByRole('dialog').getByRole('radio', { name: /as they are stored/ }).focus();
        await page.keyboard.press('ArrowDown');
        await type(page, 'Feedback types', 'svc.reaction.1');
        await page.getByRole('button', { name: 'Add payload condition' }).focus();
        await page.keyboard.press('Enter');
        await page.keyboard.type('detoned_alias');
        await type(page, 'Payload condition 1 value', ':thumbs_down:');
        expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
        await page.getByRole('dialog').screenshot({ path: `${REPORTS}${backend}-rule-form-feedback-dark-390.png` });
        expect(await seriousViolations(page)).toEqual([]);
        await page.keyboard.press('Enter');
        await card(page, 'Thumbs down').waitFor();
        const rule = (await queryRules(server, alice.api_key, PROJECT, queueId)).find((r) => r.name === 'Thumbs down')!;
        expect(rule).toMatchObject({ trigger: 'feedback', filter: { feedback_types: ['svc.reaction.1'], payload: [{ path: 'detoned_alias', op: 'eq', value: ':thumbs_down:' }] }, sample_rate: 1, max_items_per_day: null });

        // A chat call (not in the queue yet) gets a thumbs-down: the rule adds it, and the card counts it.
        const callId = callIds[1]!;
        const reply = await batchCreate(server, alice.api_key, [{ project_id: PROJECT, svc_ref: callRefOf(PROJECT, callId), feedback_type: 'svc.reaction.1', payload: { emoji: '👎' } }]);
        expect(reply.status, reply.text).toBe(200);
        await expect.poll(() => stat(page, 'Thumbs down', 'added'), LOADED).toBe('1');
        expect((await readRule(server, alice.api_key, PROJECT, queueId, rule.id)).stats.added).toBe(1);
        await expect.poll(() => page.getByText(`Showing 50 of ${ADDED + 1} items`).count(), LOADED).toBe(1);
      } finally {
        await close();
      }
    });

    it('disables, enables and deletes a rule, as the API then answers', async () => {
      const { page, close } = await openQueuePage(alice);
      const stored = async (name: string): Promise<Rule | undefined> => (await queryRules(server, alice.api_key, PROJECT, queueId)).find((r) => r.name === name);
      try {
        const rule = card(page, 'Long chats');
        await rule.getByRole('button', { name: 'Disable Long chats' }).focus();
        await page.keyboard.press('Enter');
        await rule.getByText('Disabled', { exact: true }).waitFor();
        expect((await stored('Long chats'))?.enabled).toBe(false);
        // The focus stays on the same control, now Enable.
        await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')), LOADED).toBe('Enable Long chats');
        await page.keyboard.press('Enter');
        await rule.getByText('Enabled', { exact: true }).waitFor();
        expect((await stored('Long chats'))?.enabled).toBe(true);

        await rule.getByRole('button', { name: 'Delete Long chats' }).focus();
        await page.keyboard.press('Enter');
        const dialog = page.getByRole('dialog', { name: 'Delete rule Long chats?' });
        await dialog.waitFor();
        // The focus starts on "Keep it": Tab back to Delete rule.
        await page.keyboard.press('Shift+Tab');
        await page.keyboard.press('Enter');
        await page.getByRole('status').getByText('Deleted rule Long chats; the items it added stay.').waitFor();
        await expect.poll(() => card(page, 'Long chats').count(), LOADED).toBe(0);
        expect(await stored('Long chats')).toBeUndefined();
        expect((await queryRules(server, alice.api_key, PROJECT, queueId)).map((r) => r.name)).toEqual(['Summaries', 'Thumbs down']);
      } finally {
        await close();
      }
    });

    it('shows a viewer the rules read-only, and an annotator no rules', async () => {
      const forViewer = await openQueuePage(viewer, { colorScheme: 'dark', width: 390 });
      try {
        const { page } = forViewer;
        await card(page, 'Summaries').waitFor();
        expect(await page.getByRole('button', { name: 'New rule' }).isDisabled()).toBe(true);
        expect(await page.getByRole('button', { name: 'Disable Summaries' }).isDisabled()).toBe(true);
        expect(await page.getByRole('button', { name: 'Delete Thumbs down' }).isDisabled()).toBe(true);
        await page.locator('#read-only-rules').getByText('Viewers can read this project but not change it.').waitFor();
        expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
        await screenshot(page, `${backend}-rules-viewer-dark-390`);
        await page.locator('.rule-section').screenshot({ path: `${REPORTS}${backend}-rules-viewer-dark-390-section.png` });
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await forViewer.close();
      }
      // An annotator is not shown a queue's page at all (My queues and the annotate page are theirs).
      const forAnnotator = await openQueuePage(annotator, {}, 'h1:text("Not available to annotators")');
      try {
        expect(await forAnnotator.page.getByRole('heading', { name: 'Rules' }).count()).toBe(0);
      } finally {
        await forAnnotator.close();
      }
    });

    it('saw no CSP violation, console error or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});
