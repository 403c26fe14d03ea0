import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { allFeedback, batchCreate, callRefOf, createSpec } from '../harness/feedback.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { claim, createCalls, createQueue, progress, projectQuery, queryItems, stats, uniqueId, type CallInput } from '../harness/queues.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// The annotate page in Chromium against the real server: everything is set up through the API,
// the annotating is done with the keyboard only, and what the page stored is read back through
// the API.

const PROJECT = 'acme/annotate';
const SPECS = {
  helpfulness: { type: 'integer', minimum: 1, maximum: 5 },
  correct: { type: 'boolean' },
  tone: { enum: ['friendly', 'neutral', 'rude'] },
  tokens: { type: 'integer', minimum: 0, maximum: 1000 },
} as const;
const HOSTILE = `Hello <img src=x onerror="document.title='pwned'"> and <script>document.title='pwned'</script> [link](javascript:document.title='pwned') ![pic](https://example.com/pic.png)`;

describeInBrowser('annotate page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('annotate page', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let refs: Record<keyof typeof SPECS, string>;
    const troubles: PageTrouble[] = [];
    const dialogs: string[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      refs = {} as typeof refs;
      for (const [name, schema] of Object.entries(SPECS)) refs[name as keyof typeof SPECS] = (await createSpec(server, alice.api_key, PROJECT, name, schema)).ref;
    });
    afterAll(() => server?.stop());

    /** A queue with the rubric and one item per call, in call order. */
    async function queueOf(calls: CallInput[], fields: Record<string, unknown> = {}, displayFields?: string[]) {
      const callIds = await createCalls(server, alice.api_key, PROJECT, calls.map((call) => ({ id: uniqueId('call'), ...call })));
      const queueId = await createQueue(server, alice.api_key, PROJECT, { scorer_refs: Object.values(refs), ...fields });
      const added = await rest(server, 'POST', `/annotation_queues/${queueId}/items`, {
        key: alice.api_key,
        body: { project_id: PROJECT, call_ids: callIds, ...(displayFields ? { display_fields: displayFields } : {}) },
      });
      expect(added.status, added.text).toBe(200);
      return { queueId, callIds };
    }

    /** Console errors other than Chromium's log of a request answered 404. */
    const withoutNotFound = (errors: string[]) => errors.filter((message) => !/status of 404/.test(message));

    /** The annotate page of a queue, signed in as alice, with no pointer ever used. */
    async function openAnnotate(queueId: string, view: PageView = {}): Promise<{ page: Page; trouble: PageTrouble; close: () => Promise<void> }> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      const { page } = opened;
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
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
    const pointerEvents = (page: Page) => page.evaluate(() => (window as unknown as { pointerEvents: number }).pointerEvents);

    it('annotates three items with the keyboard only, stores exactly their feedback and progress, and replaces a reopened one', async () => {
      const { queueId, callIds } = await queueOf(
        [
          {
            op_name: 'chat-1',
            inputs: { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: [{ type: 'text', text: 'What is **2+2**?' }] }] },
            output: { role: 'assistant', content: 'It is **four**.' },
            started_at: '2026-11-20T10:00:00.000Z',
            ended_at: '2026-11-20T10:00:01.250Z',
          },
          { op_name: 'chat-2', inputs: { question: 'Name a prime.' }, output: 'Seven is prime.' },
          { op_name: 'chat-3', inputs: { question: 'Weather?' }, output: { forecast: { today: 'rain', tomorrow: ['sun', 'wind'] } } },
        ],
        {},
        ['inputs.question'],
      );
      const { page, close } = await openAnnotate(queueId);
      try {
        expect(await seriousViolations(page)).toEqual([]);
        // Start annotating has the focus: Enter claims the first item.
        await page.keyboard.press('Enter');
        await callHeading(page, 'chat-1').waitFor();
        // The call for people: a conversation with Markdown, duration, display fields first.
        const call = page.getByRole('article');
        expect(await call.getByText('1.3 s').count()).toBe(1);
        expect(await call.locator('.message-role').allInnerTexts()).toEqual(['SYSTEM', 'USER', 'ASSISTANT']);
        await expect.poll(() => call.locator('strong').allInnerTexts()).toEqual(['2+2', 'four']);
        expect(await call.getByRole('region', { name: 'Display fields' }).getByText('Not in this call.').count()).toBe(1);
        await expect.poll(() => page.getByText(/0 of 3 items done/).count()).toBe(1);
        expect(await page.getByText(/Held for you: \d+:\d\d left/).count()).toBe(1);
        await screenshot(page, `${backend}-annotate`);
        expect(await seriousViolations(page)).toEqual([]);

        // Item 1: scale 4, yes, neutral, tokens 75 (the digit 7 moves into the field), a note.
        for (const key of ['4', '1', '2', '7', '5', 'Escape', 'n']) await page.keyboard.press(key);
        await page.keyboard.type('Clear answer');
        expect(await page.getByLabel('Note').inputValue()).toBe('Clear answer');
        await page.keyboard.press('Control+Enter');
        await callHeading(page, 'chat-2').waitFor();
        // Display fields come first; a string output reads as Markdown.
        const shown = page.getByRole('region', { name: 'Display fields' });
        expect(await shown.innerText()).toContain('Name a prime.');
        expect(await page.getByLabel('Note').inputValue()).toBe('');

        // Item 2: submitted from inside a text field.
        for (const key of ['5', '2', '1', '3']) await page.keyboard.press(key);
        expect(await page.getByLabel('tokens').inputValue()).toBe('3');
        await page.keyboard.press('Control+Enter');
        await callHeading(page, 'chat-3').waitFor();
        // Anything else is a collapsible JSON tree.
        expect(await page.getByRole('region', { name: 'Output' }).innerText()).toMatch(/forecast\s+\{2 items\}\s+today: "rain"\s+tomorrow:\s*\[2 items\]/);

        // Item 3: a reaction, reached with Tab and the arrow keys from the note; shortcut help with ?.
        await page.keyboard.press('?');
        await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
        expect(await page.getByRole('dialog').innerText()).toMatch(/Ctrl\+Enter[\s\S]*Submit and next/);
        await page.keyboard.press('Escape');
        await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
        for (const key of ['3', '1', '3', '9', '9', 'Escape', 'n']) await page.keyboard.press(key);
        await page.keyboard.type('ok');
        await page.keyboard.press('Tab');
        await page.keyboard.press('ArrowRight');
        await page.keyboard.press('Meta+Enter');
        await page.getByRole('heading', { name: 'Nothing left to annotate' }).waitFor();
        await expect.poll(() => page.getByRole('region', { name: 'Nothing left to annotate' }).locator('dd').allInnerTexts()).toEqual(['3', '3', '3', '0', '0', '0']);
        await screenshot(page, `${backend}-annotate-done`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await pointerEvents(page)).toBe(0);

        // What was stored: exactly these records, and every item completed by alice.
        const callRef = (index: number) => callRefOf(PROJECT, callIds[index]!);
        const about = (index: number) => ({ svc_ref: callRef(index), call_ref: callRef(index), queue_id: queueId, svc_user_id: alice.user_id, project_id: PROJECT });
        const annotation = (index: number, name: keyof typeof SPECS, value: unknown) => ({ ...about(index), feedback_type: `svc.annotation.${name}`, annotation_ref: refs[name], payload: { value } });
        const note = (index: number, text: string) => ({ ...about(index), feedback_type: 'svc.note.1', annotation_ref: null, payload: { note: text } });
        const expected = [
          annotation(0, 'helpfulness', 4), annotation(0, 'correct', true), annotation(0, 'tone', 'neutral'), annotation(0, 'tokens', 75), note(0, 'Clear answer'),
          annotation(1, 'helpfulness', 5), annotation(1, 'correct', false), annotation(1, 'tone', 'friendly'), annotation(1, 'tokens', 3),
          annotation(2, 'helpfulness', 3), annotation(2, 'correct', true), annotation(2, 'tone', 'rude'), annotation(2, 'tokens', 99), note(2, 'ok'),
          { ...about(2), feedback_type: 'svc.reaction.1', annotation_ref: null, payload: { emoji: '👍', alias: ':thumbs_up:', detoned: '👍', detoned_alias: ':thumbs_up:' } },
        ];
        const view = (records: Awaited<ReturnType<typeof allFeedback>>) =>
          records
            .map(({ svc_ref, call_ref, queue_id, svc_user_id, project_id, feedback_type, annotation_ref, payload }) => ({ svc_ref, call_ref, queue_id, svc_user_id, project_id, feedback_type, annotation_ref, payload }))
            .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
        const sorted = (records: typeof expected) => [...records].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
        const stored = await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId });
        expect(view(stored)).toEqual(sorted(expected));
        const items = await queryItems(server, alice.api_key, PROJECT, queueId);
        expect(items.map((item) => [item.call_id, item.annotation_state, item.annotator_user_id])).toEqual(callIds.map((id) => [id, 'completed', alice.user_id]));
        const counts = await stats(server, alice.api_key, PROJECT, queueId);
        expect(counts.by_annotator).toEqual([{ annotator_user_id: alice.user_id, in_progress: 0, completed: 3, skipped: 0 }]);

        // Reopen the first item: its answers come back; a new helpfulness replaces its records.
        await page.getByRole('button', { name: `Reopen ${callIds[0]}` }).focus();
        await page.keyboard.press('Enter');
        await callHeading(page, 'chat-1').waitFor();
        expect(await page.getByLabel('Note').inputValue()).toBe('Clear answer');
        expect(await page.getByLabel('tokens').inputValue()).toBe('75');
        await page.getByRole('radiogroup', { name: 'helpfulness' }).getByRole('radio', { checked: true }).focus();
        await page.keyboard.press('2');
        await page.keyboard.press('Control+Enter');
        await page.getByText(/Saved your changes/).waitFor();
        const after = await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId });
        expect(view(after)).toEqual(sorted(expected.map((record) => (record === expected[0] ? annotation(0, 'helpfulness', 2) : record))));
        const firstIds = new Set(stored.filter((record) => record.call_ref === callRef(0)).map((record) => record.id));
        expect(after.filter((record) => firstIds.has(record.id))).toEqual([]);
        expect(await pointerEvents(page)).toBe(0);
      } finally {
        await close();
      }
    });

    it('walks back with p through the items completed in an earlier session, latest first, and saves a changed answer as a new record; progress stays', async () => {
      const { queueId, callIds } = await queueOf([{ op_name: 'past-1' }, { op_name: 'past-2' }, { op_name: 'past-3' }, { op_name: 'next-4' }]);
      // An earlier session, through the API: the first three items completed in order, each with its values and a note.
      const values = [[1, true, 'friendly', 10], [2, false, 'neutral', 20], [3, true, 'rude', 30]] as const;
      for (const [index, [helpfulness, correct, tone, tokens]] of values.entries()) {
        const held = await claim(server, alice.api_key, PROJECT, queueId);
        expect(held.body.item.call_id).toBe(callIds[index]);
        const ref = callRefOf(PROJECT, callIds[index]!);
        const about = { project_id: PROJECT, svc_ref: ref, call_ref: ref, queue_id: queueId };
        const answers = { helpfulness, correct, tone, tokens };
        const batch = [
          ...Object.entries(answers).map(([name, value]) => ({ ...about, feedback_type: `svc.annotation.${name}`, annotation_ref: refs[name as keyof typeof SPECS], payload: { value } })),
          { ...about, feedback_type: 'svc.note.1', payload: { note: `note ${index + 1}` } },
        ];
        expect((await batchCreate(server, alice.api_key, batch)).status).toBe(200);
        expect((await progress(server, alice.api_key, PROJECT, queueId, held.body.item.id, 'completed')).status).toBe(200);
      }
      const finishedBefore = await rest(server, 'POST', `/annotation_queues/${queueId}/items/finished`, { key: alice.api_key, body: { project_id: PROJECT } });
      const stored = await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId });
      const { page, close } = await openAnnotate(queueId);
      try {
        // The shortcut is listed in the help overlay.
        await page.keyboard.press('?');
        expect(await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).innerText()).toMatch(/\bp\s+Open the item you completed before this one/);
        await page.keyboard.press('Escape');
        await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
        // From the start screen of a fresh page: p opens the latest completed item, with its answers.
        await page.keyboard.press('p');
        await callHeading(page, 'past-3').waitFor();
        expect(await page.getByLabel('Note').inputValue()).toBe('note 3');
        expect(await page.getByLabel('tokens').inputValue()).toBe('30');
        expect(await page.getByRole('radiogroup', { name: 'tone' }).getByRole('radio', { checked: true }).locator('..').innerText()).toMatch(/rude/);
        await screenshot(page, `${backend}-annotate-previous`);
        expect(await seriousViolations(page)).toEqual([]);
        // p again: the one before it; change helpfulness (2 → 5) and the note, and save.
        await page.keyboard.press('p');
        await callHeading(page, 'past-2').waitFor();
        expect(await page.getByLabel('Note').inputValue()).toBe('note 2');
        await page.getByRole('radiogroup', { name: 'helpfulness' }).getByRole('radio', { checked: true }).focus();
        await page.keyboard.press('5');
        await page.keyboard.press('n');
        await page.keyboard.press('End');
        await page.keyboard.type(', changed');
        await page.keyboard.press('Control+Enter');
        await page.getByText('Saved your changes to past-2').waitFor();
        // Back at the start: the earliest one is reached with the button, and nothing is before it.
        await page.getByRole('button', { name: 'Start annotating' }).waitFor();
        for (const op of ['past-3', 'past-2', 'past-1']) {
          await page.keyboard.press('p');
          await callHeading(page, op).waitFor();
        }
        await page.getByRole('button', { name: 'Previous item' }).focus();
        await page.keyboard.press('Enter');
        await page.getByText('This is the earliest item you completed in this queue.').waitFor();
        await callHeading(page, 'past-1').waitFor();
        expect(await pointerEvents(page)).toBe(0);

        // Stored: item 2's answers are new records (new ids, created later) with the new values,
        // superseding the old ones, which are gone; the other items' records are as they were.
        const after = await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId });
        const second = callRefOf(PROJECT, callIds[1]!);
        const ids = (records: typeof stored) => records.map((record) => record.id).sort();
        expect(ids(after.filter((record) => record.call_ref !== second))).toEqual(ids(stored.filter((record) => record.call_ref !== second)));
        const [before, replaced] = [stored, after].map((records) => records.filter((record) => record.call_ref === second).sort((a, b) => a.feedback_type.localeCompare(b.feedback_type)));
        expect(replaced!.map((record) => [record.feedback_type, record.payload, record.svc_user_id])).toEqual([
          ['svc.annotation.correct', { value: false }, alice.user_id],
          ['svc.annotation.helpfulness', { value: 5 }, alice.user_id],
          ['svc.annotation.tokens', { value: 20 }, alice.user_id],
          ['svc.annotation.tone', { value: 'neutral' }, alice.user_id],
          ['svc.note.1', { note: 'note 2, changed' }, alice.user_id],
        ]);
        const oldIds = new Set(before!.map((record) => record.id));
        expect(replaced!.filter((record) => oldIds.has(record.id))).toEqual([]);
        expect(replaced!.every((record) => record.created_at > before![0]!.created_at)).toBe(true);
        // Progress: the items stay completed by alice, the fourth untouched, and finishing times unchanged.
        const items = await queryItems(server, alice.api_key, PROJECT, queueId);
        expect(items.map((item) => [item.call_id, item.annotation_state, item.annotator_user_id])).toEqual([
          ...callIds.slice(0, 3).map((id) => [id, 'completed', alice.user_id]),
          [callIds[3], 'unstarted', null],
        ]);
        expect((await stats(server, alice.api_key, PROJECT, queueId)).by_annotator).toEqual([{ annotator_user_id: alice.user_id, in_progress: 0, completed: 3, skipped: 0 }]);
        const finishedAfter = await rest(server, 'POST', `/annotation_queues/${queueId}/items/finished`, { key: alice.api_key, body: { project_id: PROJECT } });
        expect(finishedAfter.body).toEqual(finishedBefore.body);
      } finally {
        await close();
      }
      // A reopened item in the dark theme on a phone.
      const phone = await openAnnotate(queueId, { width: 390, height: 844, colorScheme: 'dark' });
      try {
        await phone.page.keyboard.press('p');
        await callHeading(phone.page, 'past-3').waitFor();
        await screenshot(phone.page, `${backend}-annotate-previous-dark-390`);
        expect(await seriousViolations(phone.page)).toEqual([]);
        expect(await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      } finally {
        await phone.close();
      }
    });

    it('skips with s, and refuses a value its schema refuses at the field with nothing stored', async () => {
      const { queueId, callIds } = await queueOf([{ op_name: 'first' }, { op_name: 'second' }]);
      const { page, close } = await openAnnotate(queueId);
      try {
        await page.keyboard.press('Enter');
        await callHeading(page, 'first').waitFor();
        await page.keyboard.press('s');
        await callHeading(page, 'second').waitFor();
        let items = await queryItems(server, alice.api_key, PROJECT, queueId);
        expect(items.map((item) => [item.call_id, item.annotation_state])).toEqual([
          [callIds[0], 'skipped'],
          [callIds[1], 'in_progress'],
        ]);

        for (const key of ['4', '1', '2', '5', '0', '0', '0']) await page.keyboard.press(key);
        await page.keyboard.press('Control+Enter');
        const tokens = page.getByLabel('tokens');
        await expect.poll(() => tokens.getAttribute('aria-invalid')).toBe('true');
        const describedBy = (await tokens.getAttribute('aria-describedby'))!;
        expect(await page.locator(`[id="${describedBy}"]`).innerText()).toBe('Must be at most 1000.');
        // The field with the refused value has the focus again, to be fixed: at its label, not in
        // its text box, so that the next keys are still shortcuts.
        const tokensId = await tokens.getAttribute('id');
        expect(await page.evaluate(() => [document.activeElement?.tagName, document.activeElement?.getAttribute('for')])).toEqual(['LABEL', tokensId]);
        await screenshot(page, `${backend}-annotate-refused`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId })).toEqual([]);
        items = await queryItems(server, alice.api_key, PROJECT, queueId);
        expect(items[1]!.annotation_state).toBe('in_progress');
        expect(await pointerEvents(page)).toBe(0);
      } finally {
        await close();
      }
    });

    it('stores nothing for optional fields left empty, and after a refused submit the keys typed are shortcuts, not text', async () => {
      const comment = (await createSpec(server, alice.api_key, PROJECT, 'comment', { type: 'string', maxLength: 500 })).ref;
      const confidence = (await createSpec(server, alice.api_key, PROJECT, 'confidence', { type: ['integer', 'null'], minimum: 1, maximum: 3 })).ref;
      const { queueId, callIds } = await queueOf([{ op_name: 'opt-1' }, { op_name: 'opt-2' }], { scorer_refs: [refs.tokens, comment, confidence] });
      const { page, close } = await openAnnotate(queueId);
      try {
        await page.keyboard.press('Enter');
        await callHeading(page, 'opt-1').waitFor();
        expect(await page.getByText('(optional)', { exact: true }).count()).toBe(2);
        // Nothing entered: only tokens, which is required, is refused.
        await page.keyboard.press('Control+Enter');
        await expect.poll(() => page.getByLabel('tokens').getAttribute('aria-invalid')).toBe('true');
        expect(await page.locator('[aria-invalid="true"]').count()).toBe(1);
        // Focus is on the refused field's group, not in its box: "s" skips.
        await page.keyboard.press('s');
        await callHeading(page, 'opt-2').waitFor();
        // A digit starts the number field's value; the optional fields are left empty.
        await page.keyboard.press('7');
        await page.keyboard.press('Control+Enter');
        await page.getByRole('heading', { name: 'Nothing left to annotate' }).waitFor();

        const stored = await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId });
        expect(stored.map((record) => [record.call_ref, record.feedback_type, record.payload])).toEqual([
          [callRefOf(PROJECT, callIds[1]!), 'svc.annotation.tokens', { value: 7 }],
        ]);
        const items = await queryItems(server, alice.api_key, PROJECT, queueId);
        expect(items.map((item) => [item.call_id, item.annotation_state])).toEqual([
          [callIds[0], 'skipped'],
          [callIds[1], 'completed'],
        ]);
        expect(await pointerEvents(page)).toBe(0);
      } finally {
        await close();
      }
    });

    it('lists the shortcuts with ? from the start screen on, and shows the reactions in the system emoji font, or by name where Chromium has none', async () => {
      const { queueId } = await queueOf([{ op_name: 'react-1' }]);
      const { page, close } = await openAnnotate(queueId);
      try {
        await page.keyboard.press('?');
        const dialog = page.getByRole('dialog', { name: /shortcuts/i });
        await dialog.waitFor();
        await page.keyboard.press('Escape');
        await dialog.waitFor({ state: 'hidden' });
        await page.keyboard.press('Enter');
        await callHeading(page, 'react-1').waitFor();
        // The page's own test: a thumbs-up drawn on a canvas with a coloured pixel means a colour emoji font.
        const colour = await page.evaluate(() => {
          const context = document.createElement('canvas').getContext('2d')!;
          context.font = "20px 'Apple Color Emoji', 'Segoe UI Emoji', 'Noto Color Emoji', 'Twemoji Mozilla', sans-serif";
          context.textBaseline = 'top';
          context.fillText('👍', 0, 0);
          const data = context.getImageData(0, 0, 24, 24).data;
          for (let at = 0; at < data.length; at += 4) if (data[at + 3]! > 0 && (Math.abs(data[at]! - data[at + 1]!) > 30 || Math.abs(data[at + 1]! - data[at + 2]!) > 30)) return true;
          return false;
        });
        const shown = await page.getByRole('radiogroup', { name: 'Reaction (optional)' }).locator('.option span').allInnerTexts();
        expect(shown).toEqual(colour ? ['None', '👍', '👎', '❤️', '🎉', '🤔'] : ['None', 'thumbs up', 'thumbs down', 'red heart', 'party popper', 'thinking face']);
      } finally {
        await close();
      }
    });

    it('says when the lease has lapsed and claims again', async () => {
      const { queueId, callIds } = await queueOf([{ op_name: 'slow-1' }, { op_name: 'slow-2' }], { lease_seconds: 10 });
      const { page, close } = await openAnnotate(queueId);
      try {
        await page.keyboard.press('Enter');
        await callHeading(page, 'slow-1').waitFor();
        await page.getByText(/lease on slow-1 .* lapsed/i).waitFor({ timeout: 20_000 });
        await callHeading(page, 'slow-2').waitFor();
        const items = await queryItems(server, alice.api_key, PROJECT, queueId);
        // The lapsed item keeps alice's (expired) in-progress record; the next one is hers now.
        expect(items.map((item) => [item.call_id, item.annotation_state, item.annotator_user_id])).toEqual(callIds.map((id) => [id, 'in_progress', alice.user_id]));
        expect(await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId })).toEqual([]);
      } finally {
        await close();
      }
    });

    it('shows HTML from a call as text: nothing in it runs or loads', async () => {
      const { queueId } = await queueOf([
        {
          op_name: 'hostile',
          inputs: { messages: [{ role: 'user', content: HOSTILE }], raw: { html: HOSTILE } },
          output: HOSTILE,
        },
      ]);
      const { page, close } = await openAnnotate(queueId);
      try {
        const title = await page.title();
        await page.keyboard.press('Enter');
        await callHeading(page, 'hostile').waitFor();
        const call = page.getByRole('article');
        await expect.poll(() => call.getByText('<img src=x onerror=', { exact: false }).count()).toBe(3);
        expect(await call.getByText('<script>', { exact: false }).count()).toBe(3);
        expect(await page.locator('main img, main script, main iframe, [onerror]').count()).toBe(0);
        // A Markdown image becomes a link; a javascript: link loses its URL.
        expect(await call.getByRole('link', { name: 'image: pic' }).first().getAttribute('href')).toBe('https://example.com/pic.png');
        expect(await call.locator('a[href^="javascript"]').count()).toBe(0);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(await page.title()).toBe(title);
        await screenshot(page, `${backend}-annotate-hostile`);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await close();
      }
    });

    it('says plainly that a queue which does not exist is gone, with a way back to its project', async () => {
      const opened = await openPage(browser);
      const { page, trouble } = opened;
      try {
        await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), alice.api_key);
        await page.goto(`${server.url}/app/p/${PROJECT}/q/00000000-0000-7000-8000-000000000000/annotate`);
        await page.getByRole('heading', { level: 1, name: 'This queue is gone' }).waitFor({ timeout: 10_000 });
        await expect.poll(() => page.getByText('Loading…').count()).toBe(0);
        await page.getByRole('link', { name: `Back to ${PROJECT}` }).focus();
        await page.keyboard.press('Enter');
        await page.waitForURL(`${server.url}/app/p/${PROJECT}`);
        expect(await seriousViolations(page)).toEqual([]);
        // Chromium logs the 404 answers to the page's reads of the queue; nothing else went wrong.
        expect({ ...trouble, consoleErrors: withoutNotFound(trouble.consoleErrors) }).toEqual({ cspViolations: [], consoleErrors: [], pageErrors: [] });
      } finally {
        await opened.close();
      }
    });

    it('says at once that a queue deleted while an item is open is gone, and stores nothing after', async () => {
      const { queueId } = await queueOf([{ op_name: 'doomed-1' }, { op_name: 'doomed-2' }]);
      const { page, close, trouble } = await openAnnotate(queueId);
      try {
        await page.keyboard.press('Enter');
        await callHeading(page, 'doomed-1').waitFor();
        await page.keyboard.press('1');
        const deleted = await rest(server, 'DELETE', `/annotation_queues/${queueId}${projectQuery(PROJECT)}`, { key: alice.api_key });
        expect(deleted.status, deleted.text).toBe(200);
        // Told by the queue's live event, not by a failed submit.
        await page.getByRole('heading', { level: 1, name: 'This queue is gone' }).waitFor({ timeout: 5_000 });
        await screenshot(page, `${backend}-annotate-gone`);
        await page.keyboard.press('Control+Enter');
        await page.keyboard.press('s');
        expect(await allFeedback(server, alice.api_key, PROJECT, { queue_id: queueId })).toEqual([]);
        expect(await page.getByRole('link', { name: `Back to ${PROJECT}` }).getAttribute('href')).toBe(`/app/p/${PROJECT}`);
      } finally {
        await close();
        // The 404 answers to the page's reads of the deleted queue are expected (see the last case).
        trouble.consoleErrors.splice(0, trouble.consoleErrors.length, ...withoutNotFound(trouble.consoleErrors));
      }
    });

    it('saw no CSP violation, dialog, console error or uncaught error', () => {
      expect(dialogs).toEqual([]);
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});
