#!/usr/bin/env bash
# `npm run mini` brings up the default local cluster; `npm run mini -- down` removes it. Installs
# what is missing, builds the programs (ours, the JoinService image, and the Kubernetes programs
# and node images the nodes run: tools/kubernetes/build.mjs prints their directory), then runs
# `constellation mini <args>` (default: up), telling `mini up` where the Kubernetes programs are.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
bash tools/dev/ensure-deps.sh
npx nx run-many -t build --outputStyle=static --projects=@constellation/cli,@constellation/bootstrapper,@constellation/joinservice >/dev/null
# The JoinService's container image, which mini's control planes run as its DaemonSet's pods.
version="$(node -p 'require("./apps/joinservice/package.json").version')"
image="dist/release/joinservice-image-$version.oci.tar"
if [ ! -f "$image" ] || [ apps/joinservice/dist/joinservice.mjs -nt "$image" ]; then
  echo "==> building the JoinService image (npm run image)" >&2
  npm run image >/dev/null
fi
kubernetes_bin_dir="$(node tools/kubernetes/build.mjs)"
[ "$#" -gt 0 ] || set -- up
if [ "$1" = up ]; then
  shift
  set -- up --kubernetes-bin-dir "$kubernetes_bin_dir" "$@"
  echo "==> kubectl for this cluster: $kubernetes_bin_dir/kubectl (the built one, of the control plane's release)" >&2
fi
exec node apps/cli/dist/constellation.mjs mini "$@"
