#!/usr/bin/env node
// The installed `loupe` command: checks the Node version in plain JavaScript (so an old Node gets
// a clear message), then runs the TypeScript entry directly (Node's type stripping, no build).
var have = process.versions.node.split('.').map(Number);
if (have[0] < 22 || (have[0] === 22 && have[1] < 18)) {
  console.error('loupe needs Node.js >= 22.18 (24 LTS recommended); this is ' + process.version + '.');
  process.exit(1);
}
await import('../src/main.ts');
