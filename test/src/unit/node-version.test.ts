import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PREFLIGHT = fileURLToPath(new URL('../../../scripts/require-node.mjs', import.meta.url));
const SYSTEM_NODE = '/usr/bin/node';

/** The system's node version when it is older than the 22.19 the project needs, else undefined. */
function oldSystemNode(): string | undefined {
  if (!existsSync(SYSTEM_NODE)) return undefined;
  const version = execFileSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }).trim();
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number) as [number, number];
  return major < 22 || (major === 22 && minor < 19) ? version : undefined;
}

const old = oldSystemNode();

describe('Node version preflight (scripts/require-node.mjs)', () => {
  if (old) {
    it(`refuses ${SYSTEM_NODE} ${old} with exit 1 and one line naming the version it needs`, () => {
      const run = spawnSync(SYSTEM_NODE, [PREFLIGHT], { encoding: 'utf8' });
      expect(run.status).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('22.19');
      expect(lines[0]).toContain(old);
    });
  } else {
    it.skip(`refuses an old Node (SKIPPED: no ${SYSTEM_NODE} older than 22.19 on this machine)`, () => {});
  }

  it(`accepts the running Node ${process.version}`, () => {
    const run = spawnSync(process.execPath, [PREFLIGHT], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('');
  });
});
