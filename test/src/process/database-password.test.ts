import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, startChildServer, type ChildServer, type ProcessRun } from '../harness/child-server.ts';
import { freshDatabase, postgresAvailable, type TestDatabase } from '../harness/databases.ts';
import { freePort } from '../harness/ports.ts';

// The DATABASE_URL password never reaches the output of the server or the admin tool, in whatever
// form the URL carries it: user info, percent-encoded user info, a `password` query parameter; in
// the start-up line, in start-up failures, in configuration errors.

const SECRET = 'Sup3rS3cret';
/** Characters that must be percent-encoded in user info, and their encoded form. */
const SPECIAL = 'Sup3r@S3c/ret%';
const SPECIAL_ENCODED = encodeURIComponent(SPECIAL);

function run(entry: string, args: string[], databaseUrl: string): Promise<ProcessRun> {
  return runProcess(process.execPath, [entry, ...args], {
    DATABASE_URL: databaseUrl,
    PORT: '0',
    LOUPE_CATALOG_WATCH: 'false',
    LOUPE_DB_CONNECT_TIMEOUT_MS: '2000',
  });
}
const server = (url: string) => run('server/bin/loupe-server.js', [], url);
const admin = (url: string) => run('server/src/admin/cli.ts', ['keys', 'list', 'nobody'], url);

function expectNoSecret(output: string, ...secrets: string[]): void {
  for (const secret of secrets) expect(output, `the output shows "${secret}"`).not.toContain(secret);
}

describe('the database password in output', () => {
  let closedPort: number;
  beforeAll(async () => {
    closedPort = await freePort();
  });

  it('start-up failures of the server and the admin tool show the URL masked, in every form', async () => {
    const forms = [
      { url: `postgres://alice:${SECRET}@127.0.0.1:${closedPort}/loupe`, secrets: [SECRET] },
      { url: `postgresql://alice:${SPECIAL_ENCODED}@127.0.0.1:${closedPort}/loupe`, secrets: [SPECIAL, SPECIAL_ENCODED, 'S3c/ret'] },
      { url: `postgres://alice@127.0.0.1:${closedPort}/loupe?sslmode=disable&password=${SECRET}`, secrets: [SECRET] },
    ];
    for (const { url, secrets } of forms) {
      for (const [who, result] of [['server', await server(url)], ['admin', await admin(url)]] as const) {
        expect(result.code, `${who} ${url}: ${result.stderr}`).toBe(1);
        expect(result.stderr, `${who} ${url}`).toMatch(/^loupe( admin)?: /);
        expect(result.stderr, `${who} ${url}`).toMatch(/ECONNREFUSED/); // the cause is still there
        expectNoSecret(result.stdout + result.stderr, ...secrets);
      }
    }
  });

  it('configuration errors name the problem without repeating the URL', async () => {
    const unencoded = `postgres://alice:Sup3r/S3cret@127.0.0.1:${closedPort}/loupe`;
    const invalid = `postgres://alice:${SECRET} x@[bad/loupe`;
    for (const url of [unencoded, invalid]) {
      for (const [who, result] of [['server', await server(url)], ['admin', await admin(url)]] as const) {
        expect(result.code, `${who}: ${result.stderr}`).not.toBe(0);
        expect(result.stderr, who).toMatch(/DATABASE_URL: /);
        expectNoSecret(result.stdout + result.stderr, SECRET, 'Sup3r/S3cret', 'S3cret');
      }
    }
    const refused = await server(unencoded);
    expect(refused.stderr).toMatch(/percent-encode/);
  });
});

(postgresAvailable ? describe : describe.skip)(`the database password in the start-up line${postgresAvailable ? '' : ' — SKIPPED: TEST_DATABASE_URL is unset'}`, () => {
  let database: TestDatabase;
  const servers: ChildServer[] = [];
  beforeAll(async () => {
    database = await freshDatabase('postgresql');
  });
  afterAll(async () => {
    for (const child of servers) await child.stop();
    await database?.drop();
  });

  it('is masked in user info and in the query string (the test database trusts any password)', async () => {
    const url = new URL(database.url);
    const withUserInfo = new URL(url);
    withUserInfo.password = SPECIAL_ENCODED;
    const withParameter = new URL(url);
    withParameter.searchParams.set('password', SECRET);
    for (const [databaseUrl, secrets] of [
      [withUserInfo.toString(), [SPECIAL, SPECIAL_ENCODED]],
      [withParameter.toString(), [SECRET]],
    ] as const) {
      const child = await startChildServer({ databaseUrl });
      servers.push(child);
      const line = child.logs.find((l) => l.msg === 'loupe listening');
      expect(String(line?.database)).toMatch(/^postgres(ql)?:\/\/postgres(:\*\*\*)?@127\.0\.0\.1:\d+\/loupe_test_\w+(\?password=\*\*\*)?$/);
      expect(String(line?.database)).toContain('***');
      await child.stop();
      expectNoSecret(JSON.stringify(child.logs) + child.stderr(), ...secrets);
    }
  });
});
