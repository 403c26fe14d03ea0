import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import xterm from '@xterm/headless';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachBackend } from '../harness/backends.ts';
import { REPO_ROOT, runProcess } from '../harness/child-server.ts';
import { createUser, type CreatedKeyForTest } from '../harness/http.ts';
import { startTestServer, type TestServer } from '../harness/server.ts';
import { CLI_ENTRY, CLI_NODE_FLAGS, writeJsonl } from './cli-process.ts';
import { feedbackLine } from './data.ts';

// The CLI on a terminal: run in a pseudo-terminal (util-linux `script`), its output played into a
// headless xterm, and the screen it leaves read as a person would read it. Bad-line messages stand
// on lines of their own above the progress bar, and the bar is gone when the command ends.

const COLUMNS = 160;
const ROWS = 40;

/** The screen a command leaves: its text, line by line, after its output was played into a terminal. */
async function screenAfter(command: string, env: Record<string, string>): Promise<{ code: number; lines: string[]; raw: string }> {
  const run = await runProcess('script', ['-qefc', `stty cols ${COLUMNS} rows ${ROWS}; ${command}`, '/dev/null'], { ...env, TERM: 'xterm-256color' });
  const terminal = new xterm.Terminal({ cols: COLUMNS, rows: ROWS, allowProposedApi: true });
  await new Promise<void>((resolve) => terminal.write(run.stdout, resolve));
  const lines: string[] = [];
  for (let y = 0; y < terminal.buffer.active.length; y++) lines.push(terminal.buffer.active.getLine(y)!.translateToString(true));
  terminal.dispose();
  return { code: run.code ?? -1, lines: lines.filter((line) => line.trim()), raw: run.stdout };
}

describeEachBackend('loupe on a terminal', (backend) => {
  let server: TestServer;
  let member: CreatedKeyForTest;
  let dir: string;
  beforeAll(async () => {
    server = await startTestServer(backend);
    member = await createUser(server, { entity: 'acme', role: 'member' });
    dir = mkdtempSync(join(tmpdir(), 'loupe-cli-tty-'));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes bad lines above the progress bar, each whole, and clears the bar before the summary', async () => {
    const project = 'acme/tty';
    const lines = Array.from({ length: 3000 }, (_, n) => feedbackLine(project, project, n, true)) as unknown[];
    for (const bad of [2, 4, 7, 1500]) lines[bad - 1] = { ...feedbackLine(project, project, bad - 1, true), payload: 'not an object' };
    lines[9] = '{"not json';
    const path = join(dir, 'bad.jsonl');
    writeJsonl(path, lines);
    const { code, lines: screen, raw } = await screenAfter(
      `cd ${REPO_ROOT} && ${process.execPath} ${CLI_NODE_FLAGS.join(' ')} ${CLI_ENTRY} import feedback ${path} --on-error skip --batch-size 500; echo "exit $?"`,
      { LOUPE_URL: server.url, LOUPE_API_KEY: member.api_key },
    );
    expect(code).toBe(0);
    // The CLI saw a terminal: it drew its bar.
    expect(raw).toContain('import feedback');
    const said = screen.map((line) => line.trimEnd());
    // Each message a line of its own, whole, in the order the lines were found bad; the bar gone.
    const messages = said.filter((line) => /^line \d+:/.test(line));
    expect(messages.map((line) => Number(/^line (\d+)/.exec(line)![1])).sort((a, b) => a - b)).toEqual([2, 4, 7, 10, 1500]);
    for (const message of messages) expect(message).toMatch(/^line \d+: (not valid JSON.*|Invalid request at batch\[\d+\]\.payload: .+\.)$/);
    expect(said.filter((line) => /records \||ETA|\{bar\}|█|░/.test(line))).toEqual([]);
    expect(said.at(-2)).toMatch(/^feedback: 2,?995 of 2,?999 records stored; .*5 bad lines/);
    expect(said.at(-1)).toBe('exit 3');
  });
});
