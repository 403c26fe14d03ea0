// Writes brotli (.br) and gzip (.gz) variants beside each compressible file of the build, so the
// server sends compressed bytes without compressing on each request.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const dist = new URL('../dist/', import.meta.url).pathname;
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.map', '.txt']);
/** Below this size a compressed variant saves less than its headers cost. */
const MIN_BYTES = 512;

let written = 0;
for (const entry of readdirSync(dist, { withFileTypes: true, recursive: true })) {
  const path = join(entry.parentPath, entry.name);
  if (!entry.isFile() || !COMPRESSIBLE.has(extname(path))) continue;
  const raw = readFileSync(path);
  if (raw.length < MIN_BYTES) continue;
  const variants = {
    '.br': brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
    '.gz': gzipSync(raw, { level: 9 }),
  };
  for (const [suffix, body] of Object.entries(variants)) {
    if (body.length >= raw.length) continue;
    writeFileSync(path + suffix, body);
    written++;
  }
}
console.log(`precompressed ${written} files in ${dist}`);
