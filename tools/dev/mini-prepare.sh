#!/usr/bin/env bash
# What `npm run mini` and `npm run test:vm` need before the CLI runs: what is missing installed,
# the programs built (ours, the JoinService image, the Kubernetes programs and node images), and
# with --node-image the node image VM workers boot (cached per recipe, trusting mini's vendor).
# Progress on stderr; on stdout KUBERNETES_BIN_DIR=<dir> and, with --node-image, NODE_IMAGE=<dir>.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
bash tools/dev/ensure-deps.sh >&2
npx nx run-many -t build --outputStyle=static --projects=@constellation/cli,@constellation/bootstrapper,@constellation/joinservice,@constellation/node-prep >/dev/null
# The JoinService's container image, which mini's control planes run as its DaemonSet's pods.
version="$(node -p 'require("./apps/joinservice/package.json").version')"
image="dist/release/joinservice-image-$version.oci.tar"
if [ ! -f "$image" ] || [ apps/joinservice/dist/joinservice.mjs -nt "$image" ]; then
  echo "==> building the JoinService image (npm run image)" >&2
  npm run image >/dev/null
fi
echo "KUBERNETES_BIN_DIR=$(node tools/kubernetes/build.mjs)"
if [ "${1:-}" = --node-image ]; then
  # The .deb again when the programs or units it packs changed since it was built.
  deb="$(ls dist/release/constellation-node_*.deb 2>/dev/null | head -1 || true)"
  build_deb=()
  if [ -z "$deb" ] || [ -n "$(find apps/bootstrapper/dist apps/node-prep/dist deploy -newer "$deb" -type f 2>/dev/null | head -1)" ]; then
    build_deb=(--build-deb)
  fi
  mapfile -t trust < <(node apps/cli/dist/constellation.mjs mini vendor --image-options)
  echo "==> the node image for VM workers (npm run node-image -- --guest-agent ${build_deb[*]} ${trust[*]})" >&2
  echo "NODE_IMAGE=$(npm run --silent node-image -- --guest-agent "${build_deb[@]}" "${trust[@]}")"
fi
