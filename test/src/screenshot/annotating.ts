import { fileURLToPath } from 'node:url';
import { launchChromium } from '../harness/browser.ts';
import { annotateThroughApi, createAnnotatingQueue } from '../harness/annotating-fixture.ts';
import { client, createUser } from '../harness/http.ts';
import { startTestServer } from '../harness/server.ts';
import buildWebApp from '../harness/web-build.ts';

// `npm run screenshot -w test`: writes docs/annotating.png, the README's picture of the annotate
// page (1280×800): a support chat shown as a conversation, the rubric half answered with the
// keyboard. The data is the web benchmark's fixture, on a fresh SQLite database.

const OUT = fileURLToPath(new URL('../../../docs/annotating.png', import.meta.url));
const PROJECT = 'acme/support';

buildWebApp();
const server = await startTestServer('sqlite');
const browser = await launchChromium();
try {
  const maria = await createUser(server, { entity: 'acme', role: 'member', username: 'maria' });
  const sam = await createUser(server, { entity: 'acme', role: 'member', username: 'sam' });
  const queue = await createAnnotatingQueue(client(server, maria.api_key), PROJECT, 40, { name: 'Support answers', description: 'Rate the assistant’s last answer to the customer.' });
  // Someone else has done the first items: the next one is the backpack question.
  await annotateThroughApi(client(server, sam.api_key), PROJECT, queue, 11, (n) => [1 + (n % 5), n % 3 !== 0, 'friendly']);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = await context.newPage();
  await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), maria.api_key);
  await page.goto(`${server.url}/app/p/${PROJECT}/q/${queue.queueId}/annotate`);
  await page.getByRole('button', { name: 'Start annotating' }).waitFor();
  await page.keyboard.press('Enter');
  await page.locator('[data-call-shown] .markdown strong').first().waitFor();
  for (const key of ['4', '1']) await page.keyboard.press(key);
  // The focus ring of the call's heading is for keyboard users, not for the picture.
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await page.screenshot({ path: OUT });
  console.log(`wrote ${OUT}`);
  await context.close();
} finally {
  await browser.close();
  await server.stop();
}
