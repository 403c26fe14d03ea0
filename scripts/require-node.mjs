// Preflight: every script needs Node >= 22.17 (MikroORM 7, node:sqlite, type stripping).
// Written in plain old JavaScript so that it runs, and explains, under any older Node.
var need = [22, 17];
var have = process.versions.node.split('.').map(Number);
if (have[0] < need[0] || (have[0] === need[0] && have[1] < need[1])) {
  console.error(
    'Loupe needs Node.js >= ' + need.join('.') + ' (24 LTS recommended); this is ' + process.version +
      '. Run `source scripts/use-node24.sh` or install Node 24.',
  );
  process.exit(1);
}
