#!/usr/bin/env bash
# `npm run mini` brings up the default local cluster; `npm run mini -- down` removes it. Installs
# what is missing, builds the programs (ours, and the Kubernetes programs the control plane runs:
# tools/kubernetes/build.mjs prints their directory), then runs `constellation mini <args>`
# (default: up), telling `mini up` where the Kubernetes programs are.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
bash tools/dev/ensure-deps.sh
npx nx run-many -t build --outputStyle=static --projects=@constellation/cli,@constellation/bootstrapper,@constellation/joinservice,@constellation/sandbox >/dev/null
kubernetes_bin_dir="$(node tools/kubernetes/build.mjs)"
[ "$#" -gt 0 ] || set -- up
if [ "$1" = up ]; then
  shift
  set -- up --kubernetes-bin-dir "$kubernetes_bin_dir" "$@"
  echo "==> kubectl for this cluster: $kubernetes_bin_dir/kubectl (the built one, of the control plane's release)" >&2
fi
exec node apps/cli/dist/constellation.mjs mini "$@"
