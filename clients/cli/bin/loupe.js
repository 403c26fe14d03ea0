#!/usr/bin/env -S node --max-old-space-size=96 --max-semi-space-size=4
// The `loupe` command, with the heap bounds of the root `loupe` script (the CLI streams, so a small
// heap is plenty and keeps its memory flat). Checks the Node version in plain JavaScript (an old
// Node gets a clear message), turns on Node's compile cache (it keeps the type-stripped
// TypeScript, so later runs neither load the stripper nor pay its memory), then runs the entry.
import module from 'node:module';

var have = process.versions.node.split('.').map(Number);
if (have[0] < 22 || (have[0] === 22 && have[1] < 18)) {
  console.error('loupe needs Node.js >= 22.18 (24 LTS recommended); this is ' + process.version + '.');
  process.exit(1);
}
module.enableCompileCache?.();
await import('../src/main.ts');
