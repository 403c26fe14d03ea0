// Builds the web app (clients/web/dist) when it is missing or older than anything it is built
// from, so that `npm start` on a fresh clone serves /app/ with no manual step. Quiet otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const web = join(root, 'clients/web');
const built = join(web, 'dist/index.html');
const SOURCES = [
  join(web, 'src'),
  join(web, 'public'),
  join(web, 'scripts'),
  join(web, 'index.html'),
  join(web, 'vite.config.ts'),
  join(web, 'package.json'),
  join(root, 'clients/src'),
  join(root, 'package-lock.json'),
];

/** The newest modification time of a file, or of any file under a directory. */
function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let time = stat.mtimeMs;
  for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) time = Math.max(time, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return time;
}

const sourcesAt = Math.max(...SOURCES.map(newest));
const builtAt = existsSync(built) ? statSync(built).mtimeMs : -1;
if (builtAt < sourcesAt) {
  console.log(builtAt < 0 ? 'Building the web app (first start)…' : 'Rebuilding the web app (its sources changed)…');
  // A production build whatever the caller's NODE_ENV (test runners set it to "test").
  const env = { ...process.env, NODE_ENV: 'production' };
  const result = spawnSync('npm', ['run', '--silent', 'build', '-w', '@loupe/web'], { cwd: root, stdio: 'inherit', env });
  if (result.status !== 0) {
    console.error('The web app failed to build (see above); /app/ would answer 503.');
    process.exit(result.status ?? 1);
  }
}
