import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The server serves the web app from clients/web/dist: build it once, before any test starts a
// server (the script does nothing when the build is current).
export default function setup(): void {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const result = spawnSync(process.execPath, ['scripts/build-web.mjs'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('The web app failed to build: the browser tests cannot run.');
}
