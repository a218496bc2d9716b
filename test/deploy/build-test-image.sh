#!/usr/bin/env bash
# Builds the root Containerfile, as written, for the tests and prints the image's name; run under
# flock by test/deploy/containers.ts so that test files running side by side build it once.
#
# NODE_IMAGE is deploy/local-base.sh's bookworm + Node 24 + npm (no container registry here). The
# build stage runs as written: `npm ci` with the dev dependencies from the registry npm uses here,
# through the TLS-intercepting proxy whose CA reaches it as the build secret `ca` (the host's
# NODE_EXTRA_CA_CERTS, or its system bundle; $AGENTD_TEST_CA_MARKER is written above the
# certificates so that the test can look for the file's content in the image). podman's layer cache
# keeps the dependencies' layer while package.json and the lock are unchanged, and reuses every
# layer of an unchanged checkout.
set -euo pipefail
cd "$(dirname "$0")/../.."
base=$(deploy/local-base.sh)
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
ca=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
{ echo "${AGENTD_TEST_CA_MARKER:-}"; cat "$ca"; } >"$staging/ca.pem"
# runc cannot raise the limits past this machine's (test/deploy/containers.ts, LIMITS)
open_files=$(ulimit -Hn)
[ "$open_files" = unlimited ] && open_files=1048576
echo "build-test-image: building the Containerfile on $base" >&2
podman --runtime runc build --layers --format docker --network host \
  --ulimit "nofile=$open_files:$open_files" --ulimit nproc=4096:4096 \
  --build-arg NODE_IMAGE="$base" --build-arg NPM_REGISTRY="$(npm config get registry)" \
  --secret id=ca,src="$staging/ca.pem" \
  --iidfile "$staging/id" -f Containerfile . >&2
id=$(sed 's/^sha256://' "$staging/id")
image=localhost/agentd-test:${id:0:16}
podman tag "$id" "$image"
# earlier checkouts' images: each holds a copy of the bundle and node_modules (the cached layers
# they share with this one stay)
for old in $(podman images --filter reference=localhost/agentd-test --format '{{.Repository}}:{{.Tag}}'); do
  [ "$old" = "$image" ] || podman rmi "$old" >/dev/null 2>&1 || true
done
echo "$image"
