#!/bin/sh
# deploy/assemble.sh DEST: lays out in DEST what the image ships, from a built checkout (npm ci and
# npm run build done, so node_modules holds the dev dependencies too): the files `npm pack` puts in
# the package (bin, the bundle, its SBOM and licence notices, the README), package.json and the
# lock, and node_modules pruned to the production dependencies (better-sqlite3 as built here).
# The Containerfile's build stage runs it; so does the image test, on the host's checkout.
set -eu
dest=$1
mkdir -p "$dest"
packed=$(mktemp -d)
trap 'rm -rf "$packed"' EXIT
npm pack --ignore-scripts --silent --pack-destination "$packed" >/dev/null
tar -xzf "$packed"/agentd-*.tgz -C "$dest" --strip-components=1
cp package-lock.json "$dest"/
cp -a node_modules "$dest"/
cd "$dest"
npm prune --omit=dev --ignore-scripts --offline --no-audit --no-fund >/dev/null
