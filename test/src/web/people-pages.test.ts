import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { describeInBrowser, launchChromium, openPage, screenshot, seriousViolations, type PageTrouble, type PageView } from '../harness/browser.ts';
import { createUser, rest, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { givePassword, withCookie } from '../harness/sessions.ts';

// The people pages (contract 5.12, section 9) in Chromium against the real server: signing in
// with a password (a session cookie the page never sees, kept over a reload, ended by the
// sign-out), the sign-in without the password form when the server turns it off, the whole
// invitation flow from the Members page to a second browser landing on My queues, roles changed
// and members removed (the last admin kept), and the API keys page. Each outcome is read back
// through the API.

const ENTITY = 'people-web';
const OTHER = 'people-other';
const PASSWORD = 'correct horse battery staple';
const NARROW_DARK: PageView = { width: 390, height: 844, colorScheme: 'dark' };

describeInBrowser('people pages in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(() => browser?.close());

  describeEachBackend('people pages', (backend) => {
    let server: TestServer;
    let admin: CreatedKeyForTest;
    let otherAdmin: CreatedKeyForTest;
    const troubles: PageTrouble[] = [];
    let counter = 0;
    const newName = () => `newcomer${process.pid}x${++counter}`;

    beforeAll(async () => {
      server = await startTestServer(backend);
      admin = await createUser(server, { entity: ENTITY, role: 'admin' });
      otherAdmin = await createUser(server, { entity: OTHER, role: 'admin' });
      await givePassword(server, admin.username, PASSWORD);
    });
    afterAll(() => server?.stop());

    async function open(view: PageView = {}, at: TestServer = server) {
      const opened = await openPage(browser, view);
      troubles.push(opened.trouble);
      await opened.page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: at.url });
      return opened;
    }
    /** Signs in on the sign-in page with the keyboard only. */
    async function signInWithPassword(page: Page, username: string, password: string) {
      await page.getByLabel('Username').focus();
      await page.keyboard.type(username);
      await page.keyboard.press('Tab');
      await page.keyboard.type(password);
      await page.keyboard.press('Enter');
    }
    async function openSignedIn(view: PageView = {}) {
      const opened = await open(view);
      await opened.page.goto(`${server.url}/app/`);
      await signInWithPassword(opened.page, admin.username, PASSWORD);
      await opened.page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
      return opened;
    }
    async function sessionCookie(page: Page) {
      return (await page.context().cookies()).find((cookie) => cookie.name === 'loupe_session');
    }
    const membersOf = async (entity = ENTITY, key = admin.api_key) => {
      const reply = await rest(server, 'POST', `/entities/${entity}/members/query`, { key, body: {} });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.members as { user_id: string; username: string; role: string }[];
    };
    const invite = async (role: string, entity = ENTITY, key = admin.api_key) => {
      const reply = await rest(server, 'POST', `/entities/${entity}/invitations`, { key, body: { role } });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.invitation as { id: string; url: string };
    };
    /** An invitation link made on this test server (its public url is the request's own). */
    const onServer = (url: string) => `${server.url}${new URL(url).pathname}${new URL(url).hash}`;
    const noSidewaysScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

    it('signs in with a password by keyboard: a session cookie the page cannot read, kept over a reload, ended by the sign-out', async () => {
      const { page, close } = await open();
      try {
        await page.goto(`${server.url}/app/`);
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        await page.getByLabel('Password').waitFor();
        expect(await page.getByRole('button', { name: 'Use an API key instead' }).isVisible()).toBe(true);
        // No single sign-on configured: no link to it.
        expect(await page.getByRole('link', { name: 'Sign in with single sign-on' }).count()).toBe(0);
        await screenshot(page, `${backend}-people-sign-in`);
        expect(await seriousViolations(page)).toEqual([]);

        // A wrong password: said plainly, no session.
        await signInWithPassword(page, admin.username, 'not the password at all');
        const alert = page.getByRole('alert');
        await alert.waitFor();
        expect(await alert.textContent()).toBe('Wrong username or password.');
        expect(await sessionCookie(page)).toBeUndefined();
        expect(await seriousViolations(page)).toEqual([]);

        await page.getByLabel('Username').fill('');
        await page.getByLabel('Password').fill('');
        await signInWithPassword(page, admin.username, PASSWORD);
        await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
        await page.getByText(`Signed in as ${admin.username}`).waitFor();

        // The cookie is HttpOnly: the page cannot read it, and no key is kept by the browser.
        const cookie = await sessionCookie(page);
        expect(cookie?.httpOnly).toBe(true);
        expect(await page.evaluate(() => document.cookie)).not.toContain('loupe_session');
        expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
        const stored = await page.evaluate(() => Object.entries(localStorage));
        expect(stored).toEqual([['loupe.cookieSession', '1']]);
        expect(JSON.stringify(stored)).not.toContain(admin.api_key);

        // A reload keeps the session (the app asks me.read with the cookie).
        await page.reload();
        await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
        await page.getByText(`Signed in as ${admin.username}`).waitFor();
        // The admin finds the members of the entity from the projects page.
        expect(await page.getByRole('link', { name: `Members of ${ENTITY}` }).isVisible()).toBe(true);

        // The sign-out ends the session on the server: its cookie is refused afterwards.
        const pair = `loupe_session=${cookie!.value}`;
        expect((await withCookie(server, pair, 'GET', '/me')).status).toBe(200);
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        await page.getByLabel('Password').waitFor();
        const after = await withCookie(server, pair, 'GET', '/me');
        expect(after.status).toBe(401);
        expect(await page.evaluate(() => localStorage.length + sessionStorage.length)).toBe(0);
        await page.reload();
        await page.getByLabel('Password').waitFor();
        expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
      } finally {
        await close();
      }
    });

    it('offers no password form when the server turns password sign-in off (LOUPE_PASSWORD_SIGN_IN=false): the key form at once', async () => {
      // A server of its own (a SQLite file serves one server process).
      const keysOnly = await startTestServer(backend, { LOUPE_PASSWORD_SIGN_IN: 'false' });
      const someone = await createUser(keysOnly, { entity: ENTITY, role: 'member' });
      const { page, close } = await open({}, keysOnly);
      try {
        await page.goto(`${keysOnly.url}/app/`);
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        await page.getByText('This server signs people in with API keys only.').waitFor();
        expect(await page.getByLabel('Password').count()).toBe(0);
        expect(await page.getByLabel('Username').count()).toBe(0);
        await screenshot(page, `${backend}-people-sign-in-keys-only`);
        // The key form at once: there is nothing else to choose.
        expect(await page.getByRole('button', { name: 'Use an API key instead' }).count()).toBe(0);
        await page.getByLabel('API key').fill(someone.api_key);
        await page.keyboard.press('Enter');
        await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
        // No way back to a password form the server does not take.
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByLabel('API key').waitFor();
        expect(await page.getByRole('button', { name: /username and password/ }).count()).toBe(0);
      } finally {
        await close();
        await keysOnly.stop();
      }
    });

    it('invites from the Members page: a second browser opens the link, makes an account and lands on My queues; the used link says so', async () => {
      const adminPage = await openSignedIn();
      const { page } = adminPage;
      try {
        await page.getByRole('link', { name: `Members of ${ENTITY}` }).click();
        await page.getByRole('heading', { name: `Members of ${ENTITY}`, level: 1 }).waitFor();
        await page.getByRole('row', { name: new RegExp(`^${admin.username}`) }).waitFor();

        await page.getByLabel('Role', { exact: true }).selectOption('annotator');
        await page.getByRole('button', { name: 'Create invitation link' }).click();
        const linkField = page.getByLabel('Invitation link');
        await linkField.waitFor();
        const link = await linkField.inputValue();
        expect(link).toMatch(/\/app\/accept-invitation#token=[A-Za-z0-9_-]{20,}$/);
        expect(await page.getByText('it will not be shown again').isVisible()).toBe(true);
        await page.getByRole('button', { name: 'Copy', exact: true }).click();
        await page.getByText('Copied to the clipboard.').waitFor();
        expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
        await page.getByRole('row', { name: /^annotator/ }).waitFor();
        await screenshot(page, `${backend}-people-members`);
        expect(await seriousViolations(page)).toEqual([]);
        await page.getByRole('button', { name: 'Done' }).click();
        expect(await page.getByLabel('Invitation link').count()).toBe(0);

        // The invited person, in a browser of their own.
        const newcomer = await open();
        const name = newName();
        try {
          await newcomer.page.goto(onServer(link));
          await newcomer.page.getByRole('heading', { name: 'You are invited' }).waitFor();
          await screenshot(newcomer.page, `${backend}-people-invitation`);
          expect(await seriousViolations(newcomer.page)).toEqual([]);
          const fill = async (username: string, password: string) => {
            await newcomer.page.getByLabel('Username').fill(username);
            await newcomer.page.getByLabel('Password').fill(password);
            await newcomer.page.getByRole('button', { name: 'Create account and join' }).click();
          };
          // A weak password, then a taken name: the server's reasons, each at the form.
          await fill(name, 'short');
          const refusal = newcomer.page.getByRole('alert');
          await expect.poll(() => refusal.textContent()).toMatch(/at least 12 characters/);
          await fill(name, 'password1234');
          await expect.poll(() => refusal.textContent()).toMatch(/most common passwords/);
          await fill(admin.username, PASSWORD);
          await expect.poll(() => refusal.textContent()).toMatch(/is taken/);
          expect(await newcomer.page.getByLabel('Username').getAttribute('aria-invalid')).toBe('true');
          await screenshot(newcomer.page, `${backend}-people-invitation-refused`);

          await fill(name, PASSWORD);
          await newcomer.page.getByRole('heading', { name: 'My queues', level: 1 }).waitFor();
          await newcomer.page.getByText(`Signed in as ${name}`).waitFor();
          expect(await newcomer.page.evaluate(() => sessionStorage.length)).toBe(0);
          expect((await membersOf()).find((member) => member.username === name)?.role).toBe('annotator');
        } finally {
          await newcomer.close();
        }

        // The link again, in a fresh browser: used, and it says so.
        const late = await open();
        try {
          await late.page.goto(onServer(link));
          await late.page.getByLabel('Username').fill(newName());
          await late.page.getByLabel('Password').fill(PASSWORD);
          await late.page.keyboard.press('Enter');
          await expect.poll(() => late.page.getByRole('alert').textContent()).toBe('This invitation has already been used.');
        } finally {
          await late.close();
        }

        // The admin sees the newcomer, changes their role and removes them; each read back through the API.
        await page.reload();
        const role = page.getByLabel(`Role of ${name}`);
        await role.selectOption('member');
        await expect.poll(async () => (await membersOf()).find((member) => member.username === name)?.role).toBe('member');
        await page.getByRole('button', { name: `Remove ${name}` }).click();
        const dialog = page.getByRole('dialog', { name: `Remove ${name} from ${ENTITY}?` });
        await dialog.waitFor();
        await dialog.getByRole('button', { name: 'Remove member' }).click();
        await dialog.waitFor({ state: 'hidden' });
        await expect.poll(() => page.getByLabel(`Role of ${name}`).count()).toBe(0);
        expect((await membersOf()).map((member) => member.username)).not.toContain(name);

        // The last admin cannot step down: the refusal shows at the select, which keeps the role.
        await page.getByLabel(`Role of ${admin.username}`).selectOption('viewer');
        const refused = page.getByRole('row', { name: new RegExp(`^${admin.username}`) }).getByRole('alert');
        await refused.waitFor();
        expect(await refused.textContent()).toMatch(new RegExp(`last admin of entity "${ENTITY}" cannot be`));
        expect(await page.getByLabel(`Role of ${admin.username}`).inputValue()).toBe('admin');
        expect((await membersOf()).find((member) => member.username === admin.username)?.role).toBe('admin');
        await screenshot(page, `${backend}-people-members-last-admin`);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await adminPage.close();
      }
    });

    it('revokes a pending invitation on the Members page: the link then says it was revoked', async () => {
      const { page, close } = await openSignedIn();
      try {
        await page.goto(`${server.url}/app/e/${ENTITY}/members`);
        await page.getByLabel('Role', { exact: true }).selectOption('viewer');
        await page.getByLabel('Expires in').selectOption('24');
        await page.getByRole('button', { name: 'Create invitation link' }).click();
        const link = await page.getByLabel('Invitation link').inputValue();
        await page.getByRole('button', { name: 'Done' }).click();
        const row = page.getByRole('row', { name: /^viewer/ });
        await row.getByRole('button', { name: /^Revoke the viewer invitation/ }).click();
        await row.waitFor({ state: 'detached' });
        const listed = await rest(server, 'POST', `/entities/${ENTITY}/invitations/query`, { key: admin.api_key, body: {} });
        const token = new URL(link).hash;
        const revoked = (listed.body.invitations as { state: string; role: string }[]).filter((invitation) => invitation.role === 'viewer');
        expect(revoked.map((invitation) => invitation.state)).toEqual(['revoked']);

        const visitor = await open();
        try {
          await visitor.page.goto(`${server.url}/app/accept-invitation${token}`);
          await visitor.page.getByLabel('Username').fill(newName());
          await visitor.page.getByLabel('Password').fill(PASSWORD);
          await visitor.page.keyboard.press('Enter');
          await expect.poll(() => visitor.page.getByRole('alert').textContent()).toBe('This invitation has been revoked.');
        } finally {
          await visitor.close();
        }
      } finally {
        await close();
      }
    });

    it('joins another entity with the signed-in account', async () => {
      const { page, close } = await openSignedIn();
      try {
        const invitation = await invite('viewer', OTHER, otherAdmin.api_key);
        await page.goto(onServer(invitation.url));
        await page.getByRole('button', { name: `Join with your account ${admin.username}` }).click();
        await page.getByRole('heading', { name: 'Projects', level: 1 }).waitFor();
        await expect.poll(() => page.getByRole('listitem').filter({ hasText: OTHER }).innerText()).toMatch(new RegExp(`${OTHER}\\s+viewer`));
        expect((await membersOf(OTHER, otherAdmin.api_key)).find((member) => member.username === admin.username)?.role).toBe('viewer');
      } finally {
        await close();
      }
    });

    it('tells a non-admin that only admins manage members', async () => {
      const { page, close } = await openSignedIn();
      try {
        await page.goto(`${server.url}/app/e/${OTHER}/members`);
        await page.getByText(`Only admins of ${OTHER} manage its members.`).waitFor();
        expect(await page.getByRole('button', { name: 'Create invitation link' }).count()).toBe(0);
      } finally {
        await close();
      }
    });

    it('makes an API key (shown once, accepted by the API) and revokes it (then refused)', async () => {
      const { page, close } = await openSignedIn();
      try {
        await page.getByRole('link', { name: 'API keys' }).click();
        await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
        await page.getByLabel('Key name').fill('evaluation script');
        await page.keyboard.press('Enter');
        const field = page.getByLabel('API key', { exact: true });
        await field.waitFor();
        const key = await field.inputValue();
        expect(await page.getByText('Copy it now: it will not be shown again.').isVisible()).toBe(true);
        const me = await rest(server, 'GET', '/me', { key });
        expect(me.status, me.text).toBe(200);
        expect(me.body.username).toBe(admin.username);
        await page.getByRole('row', { name: /^evaluation script/ }).waitFor();
        await screenshot(page, `${backend}-people-keys`);
        expect(await seriousViolations(page)).toEqual([]);

        await page.getByRole('button', { name: 'Done' }).click();
        expect(await page.content()).not.toContain(key);
        await page.getByRole('button', { name: 'Revoke evaluation script' }).click();
        const dialog = page.getByRole('dialog', { name: 'Revoke the key “evaluation script”?' });
        await dialog.getByRole('button', { name: 'Revoke key' }).click();
        await dialog.waitFor({ state: 'hidden' });
        await page.getByRole('row', { name: /^evaluation script/ }).waitFor({ state: 'detached' });
        expect((await rest(server, 'GET', '/me', { key })).status).toBe(401);
        // Still signed in with the cookie.
        expect(await page.getByText(`Signed in as ${admin.username}`).isVisible()).toBe(true);
      } finally {
        await close();
      }
    });

    it('shows the sign-in, invitation, Members and API keys pages in the dark theme at 390 px: no axe violation, no sideways scrolling', async () => {
      const link = new URL((await invite('member')).url);
      const shots: [string, string, (page: Page) => Promise<unknown>][] = [
        ['sign-in', '/app/', (page) => page.getByLabel('Password').waitFor()],
        ['invitation', link.pathname + link.hash, (page) => page.getByLabel('Username').waitFor()],
        ['members', `/app/e/${ENTITY}/members`, (page) => page.getByRole('heading', { name: 'Pending invitations' }).waitFor()],
        ['keys', '/app/keys', (page) => page.getByText(/You have no API key|Your API keys/).first().waitFor()],
      ];
      for (const [name, path, shown] of shots) {
        const { page, close } = await open(NARROW_DARK);
        try {
          if (name === 'members' || name === 'keys') await page.addInitScript((apiKey: string) => sessionStorage.setItem('loupe.apiKey', apiKey), admin.api_key);
          await page.goto(server.url + path);
          await shown(page);
          await expect.poll(() => page.locator('main').getByText(/^Loading/).count()).toBe(0);
          await screenshot(page, `${backend}-people-dark-390-${name}`);
          expect(await seriousViolations(page), name).toEqual([]);
          expect(await noSidewaysScroll(page), name).toBeLessThanOrEqual(0);
        } finally {
          await close();
        }
      }
    });

    it('saw no CSP violation, console error (but the refusals it asked for) or uncaught error', () => {
      expect(troubles.flatMap((trouble) => [...trouble.cspViolations, ...trouble.pageErrors])).toEqual([]);
      const consoleErrors = troubles.flatMap((trouble) => trouble.consoleErrors).filter((text) => !/status of (400|401|409)/.test(text));
      expect(consoleErrors).toEqual([]);
    });
  });
});
