// Preflight: every script needs Node >= 22.19 (MikroORM 7 and node:sqlite at run time need 22.17;
// the test tools need 22.19, and npm ci installs them too).
// Written in plain old JavaScript so that it runs, and explains, under any older Node.
var need = [22, 19];
var have = process.versions.node.split('.').map(Number);
if (have[0] < need[0] || (have[0] === need[0] && have[1] < need[1])) {
  console.error(
    'Loupe needs Node.js >= ' + need.join('.') + ' (24 LTS recommended); this is ' + process.version +
      '. Run `source scripts/use-node24.sh` or install Node 24.',
  );
  process.exit(1);
}
