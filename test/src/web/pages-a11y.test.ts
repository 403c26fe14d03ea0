import { createMemoryHistory, createRouter } from '@tanstack/react-router';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pageRoutes, routeTree, type PageName } from '../../../clients/web/src/routes.ts';
import { annotateThroughApi, createAnnotatingQueue, type AnnotatingQueue } from '../harness/annotating-fixture.ts';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { client, createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';

// Every page of the web app, over realistic data set up through the API: an axe-core scan with
// no serious or critical violation, and a full-page screenshot of each in test/reports/web/.
// The pages are a table keyed by route, so that a new route does not typecheck until it is
// listed here, and a page's new content is scanned without changing this test.

const PROJECT = 'acme/support';

type Setup = { queue: AnnotatingQueue };
type PageCase = {
  /** The page path under the app (with its leading slash), from the data set up. */
  path: (setup: Setup) => string;
  signedIn: boolean;
  /** What the page is waiting for before it counts as shown, beyond its loading messages. */
  shown?: (page: Page) => Promise<unknown>;
};

const queuePath = (setup: Setup) => `/app/p/${PROJECT}/q/${setup.queue.queueId}`;

const ROUTES: Record<PageName, PageCase> = {
  projects: { path: () => '/app/', signedIn: true, shown: (page) => page.locator('main table tbody tr').first().waitFor() },
  mine: { path: () => '/app/mine', signedIn: true, shown: (page) => page.getByRole('link', { name: 'Start annotating Support answers' }).waitFor() },
  models: { path: () => '/app/models', signedIn: true },
  // Without its token: the page says the link is incomplete (people-pages.test.ts shows the form).
  'accept-invitation': { path: () => '/app/accept-invitation', signedIn: false, shown: (page) => page.getByRole('heading', { name: 'You are invited' }).waitFor() },
  keys: { path: () => '/app/keys', signedIn: true, shown: (page) => page.getByRole('heading', { name: 'Your keys' }).waitFor() },
  // Alice is a member of acme, not an admin: the page says who manages members (people-pages.test.ts shows an admin's).
  members: { path: () => '/app/e/acme/members', signedIn: true, shown: (page) => page.getByText('Only admins of acme manage its members.').waitFor() },
  project: { path: () => `/app/p/${PROJECT}`, signedIn: true },
  webhooks: { path: () => `/app/p/${PROJECT}/webhooks`, signedIn: true },
  queue: { path: queuePath, signedIn: true },
  annotate: {
    path: (setup) => `${queuePath(setup)}/annotate`,
    signedIn: true,
    // An item claimed and shown, its Markdown rendered.
    shown: async (page) => {
      await page.getByRole('button', { name: 'Start annotating' }).click();
      await page.locator('[data-call-shown] .markdown strong').first().waitFor();
    },
  },
  agreement: { path: (setup) => `${queuePath(setup)}/agreement`, signedIn: true },
  'not-found': { path: () => '/app/no/such/page', signedIn: true, shown: (page) => page.getByRole('heading', { name: 'Page not found' }).waitFor() },
};

/** The page the app's route tree shows at a path under /app (matched by the router itself, nothing rendered). */
function pageAt(path: string): PageName {
  const router = createRouter({ routeTree, history: createMemoryHistory() });
  const leaf = router.matchRoutes(path.slice('/app'.length) || '/').at(-1)?.routeId;
  const page = Object.entries(pageRoutes).find(([, route]) => route.id === leaf);
  return page ? (page[0] as PageName) : 'not-found';
}

/** The sign-in page (what /app/ shows signed out), then every route. */
const PAGES: [string, PageCase][] = [
  ['sign-in', { path: () => '/app/', signedIn: false, shown: (page) => page.getByRole('heading', { name: 'Sign in' }).waitFor() }],
  ...Object.entries(ROUTES),
];

describeInBrowser('every page in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('every page', (backend) => {
    let server: TestServer;
    let alice: CreatedKeyForTest;
    let setup: Setup;
    const troubles: PageTrouble[] = [];

    beforeAll(async () => {
      server = await startTestServer(backend);
      alice = await createUser(server, { entity: 'acme', role: 'member' });
      const bob = await createUser(server, { entity: 'acme', role: 'member' });
      const queue = await createAnnotatingQueue(client(server, alice.api_key), PROJECT, 12, {
        name: 'Support answers',
        description: 'Rate the assistant’s last answer to the customer.',
        annotations_per_item: 2,
      });
      // Two annotators on the same first items, mostly agreeing: progress and agreement to show.
      await annotateThroughApi(client(server, alice.api_key), PROJECT, queue, 5, (n) => [1 + ((n * 3) % 5), n % 4 !== 0, ['friendly', 'neutral', 'curt'][n % 3]!]);
      await annotateThroughApi(client(server, bob.api_key), PROJECT, queue, 5, (n) => [1 + ((n * 3 + (n === 2 ? 1 : 0)) % 5), n % 4 !== 0, ['friendly', 'neutral', 'curt'][n % 3]!]);
      setup = { queue };
    });
    afterAll(() => server?.stop());

    it('lists every route of the app, each at a path that is that route', () => {
      for (const [name, entry] of Object.entries(ROUTES)) expect(pageAt(entry.path(setup))).toBe(name);
    });

    for (const [name, entry] of PAGES) {
      it(`${name}: no serious or critical axe violation, and a screenshot`, async () => {
        await visit(name, entry, {});
      });
      // The dark theme on a phone: its colours pass axe's contrast checks, and nothing scrolls sideways.
      it(`${name}, dark theme at 390 px: no serious or critical axe violation, no sideways scrolling, and a screenshot`, async () => {
        await visit(name, entry, { width: 390, height: 844, colorScheme: 'dark' });
      });
    }

    async function visit(name: string, entry: PageCase, view: PageView): Promise<void> {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      const { page } = opened;
      try {
        if (entry.signedIn) await page.addInitScript((key: string) => sessionStorage.setItem('loupe.apiKey', key), alice.api_key);
        await page.goto(server.url + entry.path(setup));
        await page.locator('main h1').first().waitFor();
        await entry.shown?.(page);
        // Settled: no part of the page still loading.
        await expect.poll(() => page.locator('main').getByText(/^Loading/).count()).toBe(0);
        const variant = view.colorScheme === 'dark' ? `dark-${view.width}-` : '';
        await screenshot(page, `${backend}-page-${variant}${name}`);
        expect(await seriousViolations(page)).toEqual([]);
        if (view.width !== undefined) expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      } finally {
        await opened.close();
      }
    }

    it('saw no CSP violation, console error or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors, ...trouble.consoleErrors])).toEqual([]);
    });
  });
});
