#!/usr/bin/env bash
# Builds the root Containerfile for the tests and prints the image's name; run under flock by
# test/deploy/image.ts so that test files running side by side build it once.
#
# NODE_IMAGE is deploy/local-base.sh's bookworm + Node 24 (no container registry here), and the
# build stage is replaced (--build-context build=…) by the same deploy/assemble.sh run on this
# checkout, which `npm test` has just built: the image stage, the part users and the tests share,
# runs as written, without compiling better-sqlite3 or downloading the dependencies a second time.
# The name is a hash of every input, so an unchanged checkout reuses the image of its last run.
set -euo pipefail
cd "$(dirname "$0")/../.."
base=$(deploy/local-base.sh)
key=$( { podman image inspect --format '{{.Id}}' "$base"
         cat Containerfile .containerignore deploy/assemble.sh deploy/healthcheck.mjs package.json package-lock.json
         find bin dist/bundle dist/client -type f -print0 | sort -z | xargs -0 sha256sum
       } | sha256sum | cut -c1-16)
image=localhost/agentd-test:$key
if podman image exists "$image"; then
  echo "$image"
  exit 0
fi
echo "build-test-image: building $image on $base" >&2
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
deploy/assemble.sh "$staging/opt/agentd"
podman --runtime runc build --quiet --format docker --build-arg NODE_IMAGE="$base" \
  --build-context build="$staging" -t "$image" -f Containerfile . >/dev/null
# earlier checkouts' images: each holds a copy of the bundle and node_modules
for old in $(podman images --filter reference=localhost/agentd-test --format '{{.Repository}}:{{.Tag}}'); do
  [ "$old" = "$image" ] || podman rmi "$old" >/dev/null 2>&1 || true
done
echo "$image"
