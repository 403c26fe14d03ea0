import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageView } from '../harness/browser.ts';
import { startTestProvider, type TestProvider } from '../harness/oidc-provider.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { withCookie } from '../harness/sessions.ts';

// Single sign-on from the web app's sign-in page in Chromium (contract 5.12): with password
// sign-in off, the page offers single sign-on (and a key) only; the link goes through the real
// provider's login page (oidc-provider in this process) and lands in the app signed in, which is
// read back through the API with the browser's own cookie.

const ENTITY = 'sso-web';
const NARROW_DARK: PageView = { width: 390, height: 844, colorScheme: 'dark' };

describeInBrowser('single sign-on in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('single sign-on sign-in page', (backend) => {
    let provider: TestProvider;
    let server: TestServer;

    beforeAll(async () => {
      provider = await startTestProvider();
      server = await startTestServer(backend, {
        LOUPE_PASSWORD_SIGN_IN: 'false',
        LOUPE_OIDC_ISSUER: provider.issuer,
        LOUPE_OIDC_CLIENT_ID: 'loupe',
        LOUPE_OIDC_CLIENT_SECRET: 'loupe-client-secret-0123456789',
        LOUPE_OIDC_ENTITY: ENTITY,
        LOUPE_OIDC_ROLE_MAP: 'loupe-admins=admin, staff=member',
      });
      provider.register([{ client_id: 'loupe', client_secret: 'loupe-client-secret-0123456789', redirect_uris: [`${server.url}/auth/oidc/callback`] }]);
    });
    afterAll(async () => {
      await server?.stop();
      await provider?.close();
    });

    it('offers single sign-on (and a key) only; the link signs in through the provider\'s login page and lands in the app signed in', async () => {
      provider.accounts.set('web-person', { preferred_username: 'webby', email: 'webby@example.com', groups: ['staff'] });
      const { page, trouble, close } = await openPage(browser);
      try {
        await page.goto(`${server.url}/app/`);
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        const sso = page.getByRole('link', { name: 'Sign in with single sign-on' });
        await sso.waitFor();
        expect(await page.getByRole('button', { name: 'Use an API key instead' }).isVisible()).toBe(true);
        expect(await page.getByLabel('Password').count()).toBe(0);
        expect(await page.getByLabel('Username').count()).toBe(0);
        await screenshot(page, `${backend}-sso-sign-in`);
        expect(await seriousViolations(page)).toEqual([]);

        // By keyboard: the link is reached with Tab and followed with Enter.
        await sso.focus();
        await page.keyboard.press('Enter');
        // The provider's own (development) login page: any login, any password.
        await page.getByPlaceholder('Enter any login').fill('web-person');
        await page.getByPlaceholder('and password').fill('any password');
        await page.getByRole('button', { name: 'Sign-in' }).click();

        await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
        await page.getByText('Signed in as webby').waitFor();
        expect(new URL(page.url()).pathname).toBe('/app/');
        const cookie = (await page.context().cookies(server.url)).find((c) => c.name === 'loupe_session');
        expect(cookie?.httpOnly).toBe(true);
        // The attempt's cookie is gone.
        expect((await page.context().cookies(`${server.url}/auth/oidc/callback`)).some((c) => c.name === 'loupe_oidc')).toBe(false);
        const me = await withCookie(server, `loupe_session=${cookie!.value}`, 'GET', '/me');
        expect(me.status, me.text).toBe(200);
        expect(me.body).toMatchObject({ username: 'webby', memberships: [{ entity: ENTITY, role: 'member' }] });

        // A reload keeps the session.
        await page.reload();
        await page.getByText('Signed in as webby').waitFor();
        expect(trouble.pageErrors).toEqual([]);
      } finally {
        await close();
      }
    });

    it('ends a refused attempt on a readable page with a way back to the sign-in page (light, and dark at a phone\'s width)', async () => {
      for (const [view, name] of [[{}, 'light'], [NARROW_DARK, 'dark-narrow']] as const) {
        const { page, trouble, close } = await openPage(browser, view);
        try {
          // The provider's answer arriving in a browser that started no attempt.
          const answer = await page.goto(`${server.url}/auth/oidc/callback?code=stolen&state=guessed`);
          expect(answer?.status()).toBe(400);
          await page.getByRole('heading', { name: 'Sign-in failed', level: 1 }).waitFor();
          expect(await page.getByText(/expired or was not started in this browser/).isVisible()).toBe(true);
          await screenshot(page, `${backend}-sso-refused-${name}`);
          expect(await seriousViolations(page)).toEqual([]);
          // Its one inline style is allowed by its hash: nothing is refused.
          expect(trouble.cspViolations).toEqual([]);
          await page.getByRole('link', { name: 'Back to sign-in' }).click();
          await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
          if (view === NARROW_DARK) await screenshot(page, `${backend}-sso-sign-in-${name}`);
        } finally {
          await close();
        }
      }
    });
  });
});
